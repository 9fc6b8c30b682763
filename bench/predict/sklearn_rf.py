#!/usr/bin/python3
"""scikit-learn baseline of the predict benchmark (see bench/predict_vs_sklearn.sh).

Reads DIR/train.csv (the encoded training rows of package predict and their natural log of
iterations) and DIR/test.csv (the encoded test vectors, as the predictor saw them at each
job's arrival, and the true iterations), fits sklearn.ensemble.RandomForestRegressor on
log(iterations) and writes, for each configuration, DIR/sklearn_<tag>.csv (one column,
"prediction": exp of the predicted log) and DIR/sklearn_<tag>.json (name, training wall-clock
and CPU seconds, the latter over all threads).

Configurations:
  default: RandomForestRegressor(n_estimators=100), scikit-learn's defaults otherwise
           (max_features=1.0, min_samples_leaf=1, bootstrap).
  tuned:   the best of a small grid (max_features in {1/3, 1/2, 1.0} x min_samples_leaf in
           {5, 10, 20, 40}, 100 trees), chosen on a validation split of the training rows (the
           last 1/8, in finish order), then refitted on all training rows. The test rows are
           not looked at. (Our forest's options were chosen the same way: on a validation split
           before the test split, bench/predict -sweep.) With SKLEARN_TUNED=<max_features>,<leaf>
           in the environment the grid is skipped and those values are used.
"""
import csv
import json
import math
import os
import sys
import time

import numpy as np
from sklearn.ensemble import RandomForestRegressor


def load(path):
    with open(path) as f:
        r = csv.reader(f)
        header = next(r)
        data = np.array([[float(v) for v in row] for row in r])
    return header, data[:, :-1], data[:, -1]


def rmsle_log(pred_log, y_log):
    # RMSLE on iterations: log1p of exp(...).
    p = np.log1p(np.exp(pred_log))
    a = np.log1p(np.exp(y_log))
    return float(np.sqrt(np.mean((p - a) ** 2)))


def fit(params, X, y, jobs):
    m = RandomForestRegressor(random_state=1, n_jobs=jobs, **params)
    t0, c0 = time.perf_counter(), time.process_time()
    m.fit(X, y)
    return m, (time.perf_counter() - t0, time.process_time() - c0)


def main():
    d = sys.argv[1]
    jobs = int(os.environ.get("SKLEARN_JOBS", "2"))
    _, Xtr, ytr = load(os.path.join(d, "train.csv"))
    _, Xte, _ = load(os.path.join(d, "test.csv"))

    def write(tag, name, model, times):
        secs, cpu = times
        pred = np.exp(model.predict(Xte))
        with open(os.path.join(d, "sklearn_%s.csv" % tag), "w") as f:
            f.write("prediction\n")
            for v in pred:
                f.write(repr(float(v)) + "\n")
        with open(os.path.join(d, "sklearn_%s.json" % tag), "w") as f:
            json.dump({"name": name, "train_s": secs, "train_cpu": cpu}, f)
        print("%s: trained in %.2f s (%.2f s CPU)" % (name, secs, cpu), file=sys.stderr)

    default = {"n_estimators": 100}
    m, times = fit(default, Xtr, ytr, jobs)
    write("a_default", "sklearn RF (defaults, 100 trees)", m, times)

    # Small grid on a validation split of the training rows (they are in finish order).
    cut = len(ytr) * 7 // 8
    grid = [(mf, leaf) for mf in (1 / 3, 1 / 2, 1.0) for leaf in (5, 10, 20, 40)]
    if os.environ.get("SKLEARN_TUNED"):
        mf, leaf = os.environ["SKLEARN_TUNED"].split(",")
        grid = [(float(mf), int(leaf))]
    best = None
    for mf, leaf in grid:
        params = {"n_estimators": 100, "max_features": mf, "min_samples_leaf": leaf}
        if len(grid) == 1:
            best = (0.0, params)
            break
        mv, _ = fit(params, Xtr[:cut], ytr[:cut], jobs)
        score = rmsle_log(mv.predict(Xtr[cut:]), ytr[cut:])
        print("  grid max_features=%.2f min_samples_leaf=%d: validation RMSLE %.4f" % (mf, leaf, score),
              file=sys.stderr)
        if best is None or score < best[0]:
            best = (score, params)
    params = best[1]
    m, times = fit(params, Xtr, ytr, jobs)
    write("b_tuned", "sklearn RF (tuned: max_features=%.2f, min_samples_leaf=%d)"
          % (params["max_features"], params["min_samples_leaf"]), m, times)


if __name__ == "__main__":
    main()
