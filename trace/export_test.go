package trace

// NewTextReaderForTest exposes newTextReader to the external tests.
var NewTextReaderForTest = newTextReader
