package gcpace

// Armed is closed once the start's collection is over.
var Armed = armed

// Advised is the heap range asked for huge pages, empty if none was.
func Advised() (start, end uintptr) { return advised.start, advised.end }
