#!/usr/bin/python3
"""scikit-learn interval baseline of the Philly interval benchmark (bench/predict_intervals.sh).

Reads DIR/train.csv (the encoded training rows of package predict, Fit at the 70% split, and
their natural log of duration), DIR/test.csv (the test vectors as the predictor saw them at each
job's arrival, and the true durations) and DIR/clusters.csv (each test job's virtual cluster).
Fits sklearn.ensemble.RandomForestRegressor (100 trees, max_features and min_samples_leaf from
SKLEARN_TUNED, default 0.33,10: the best of the grid of sklearn_rf.py on this file) on the first
7/8 of the training rows (finish order) and prints, per cluster, the coverage of the 80% and 90%
intervals, their median width (P90/P10, P95/P5) and mean interval score on ln(duration) for:
  trees:     the 10th/90th (5th/95th) percentiles of the trees' predictions;
  conformal: split-conformal: the prediction plus the residual quantiles of the last 1/8 of the
             training rows (the calibration rows), per cluster where it has at least 50 of them
             (Mondrian), else over all.
This is the static protocol (no relearning during the test period): a reference, not the online
figure.
"""
import csv
import os
import sys

import numpy as np
from sklearn.ensemble import RandomForestRegressor


def load(path):
    with open(path) as f:
        r = csv.reader(f)
        header = next(r)
        data = np.array([[float(v) for v in row] for row in r])
    return header, data[:, :-1], data[:, -1]


def score(lo, hi, y, a):
    return (hi - lo) + 2 / a * np.maximum(lo - y, 0) + 2 / a * np.maximum(y - hi, 0)


def main():
    d = sys.argv[1]
    jobs = int(os.environ.get("SKLEARN_JOBS", "2"))
    mf, leaf = os.environ.get("SKLEARN_TUNED", "0.33,10").split(",")
    header, Xtr, ytr = load(os.path.join(d, "train.csv"))
    _, Xte, dur = load(os.path.join(d, "test.csv"))
    yte = np.log(np.maximum(dur, 1))
    with open(os.path.join(d, "clusters.csv")) as f:
        next(f)
        cl = np.array([line.strip() for line in f])
    user = header.index("user")  # the target code of the cluster: the calibration rows' cluster
    cut = len(ytr) * 7 // 8
    m = RandomForestRegressor(n_estimators=100, max_features=float(mf), min_samples_leaf=int(leaf),
                              random_state=1, n_jobs=jobs)
    m.fit(Xtr[:cut], ytr[:cut])
    res = ytr[cut:] - m.predict(Xtr[cut:])
    cal_key = Xtr[cut:, user]
    te_key = Xte[:, user]
    per_tree = np.stack([t.predict(Xte) for t in m.estimators_])
    pred = m.predict(Xte)
    out = {}
    for w in (0.8, 0.9):
        a = 1 - w
        lo_t, hi_t = np.quantile(per_tree, a / 2, axis=0), np.quantile(per_tree, 1 - a / 2, axis=0)
        glo, ghi = np.quantile(res, a / 2), np.quantile(res, 1 - a / 2)
        lo_c, hi_c = pred + glo, pred + ghi
        for k in np.unique(te_key):
            r = res[cal_key == k]
            if len(r) >= 50:
                sel = te_key == k
                lo_c[sel] = pred[sel] + np.quantile(r, a / 2)
                hi_c[sel] = pred[sel] + np.quantile(r, 1 - a / 2)
        out[("trees", w)] = (lo_t, hi_t)
        out[("conformal", w)] = (lo_c, hi_c)
    clusters = ["all"] + sorted(set(cl), key=lambda c: (-np.sum(cl == c), c))
    print("| cluster | test jobs | method | 80% coverage | 90% coverage | P90/P10 | P95/P5 | IS80 | IS90 |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for c in clusters:
        sel = np.ones(len(cl), bool) if c == "all" else cl == c
        for name in ("trees", "conformal"):
            row = []
            for w in (0.8, 0.9):
                lo, hi = out[(name, w)]
                lo, hi, y = lo[sel], hi[sel], yte[sel]
                row.append((np.mean((y >= lo) & (y <= hi)), np.median(np.exp(hi - lo)),
                            np.mean(score(lo, hi, y, 1 - w))))
            print("| %s | %d | sklearn RF, %s | %.1f%% | %.1f%% | %.1f | %.1f | %.3f | %.3f |" % (
                c, sel.sum(), name, 100 * row[0][0], 100 * row[1][0], row[0][1], row[1][1], row[0][2], row[1][2]))


if __name__ == "__main__":
    main()
