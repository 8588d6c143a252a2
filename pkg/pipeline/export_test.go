package pipeline

// NewLogReaderWith is a LogReader that reads through the function given,
// for the test of what it reads and when.
var NewLogReaderWith = newLogReader
