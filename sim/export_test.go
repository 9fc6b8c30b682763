package sim

// Break makes cfg a deliberately wrong variant, for tests that show their properties catch it:
// "norollback" checkpoints every running job just before a server fails (so a failure loses
// nothing); "earlyrepair" makes a failed server's GPUs available again at once (jobs restart
// on a server that is down).
func Break(cfg *Config, kind string) {
	switch kind {
	case "norollback":
		cfg.broken = brokenNoRollback
	case "earlyrepair":
		cfg.broken = brokenEarlyRepair
	default:
		panic("sim: unknown broken variant " + kind)
	}
}

// What the deprecated wrappers of deprecated.go forward to, for the external tests (the
// wrappers go in v0.3.0).
var (
	PercentileForTest   = percentile
	BusyIntegralForTest = (*Result).busyIntegral
)
