// Package oneline keeps an error to the single line a script can log: the
// one form every command, and every cluster of a many-cluster run, says a
// failure in.
package oneline

import "strings"

// Error is err's message with every run of white space, new lines
// included, made one space.
func Error(err error) string { return Text(err.Error()) }

// Text is s with every run of white space, new lines included, made one
// space: a message the kubelet or a log wrote, kept to one line of
// evidence.
func Text(s string) string { return strings.Join(strings.Fields(s), " ") }
