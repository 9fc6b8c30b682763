package host

// Break makes r a deliberately wrong variant, for tests that show their properties catch it:
// "order" emits each migration's stop right before its start; "norollback" keeps the progress
// an interruption should throw away.
func Break(r *Runtime, kind string) {
	switch kind {
	case "order":
		r.broken = brokenOrder
	case "norollback":
		r.broken = brokenNoRollback
	default:
		panic("host: unknown broken variant " + kind)
	}
}

// EntryBlock is the number of entries allocated at once.
const EntryBlock = entryBlock
