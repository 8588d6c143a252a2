// Package words phrases what gpuops prints: counts in English ("1 node",
// "2 nodes", never "1 nodes"), and any message kept to the single line a
// script can log, the one form every command, and every cluster of a
// many-cluster run, says a failure in.
package words

import (
	"strconv"
	"strings"
)

// Count is n and the noun, plural unless n is 1: Count(1, "node") is
// "1 node", Count(3, "node") "3 nodes". Nouns take an "s".
func Count(n int, noun string) string {
	return strconv.Itoa(n) + " " + Noun(n, noun)
}

// Noun is the noun as n of it are said: plural unless n is 1.
func Noun(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}

// ErrorLine is err's message with every run of white space, new lines
// included, made one space.
func ErrorLine(err error) string { return Line(err.Error()) }

// Line is s with every run of white space, new lines included, made one
// space: a message the kubelet or a log wrote, kept to one line of
// evidence.
func Line(s string) string { return strings.Join(strings.Fields(s), " ") }
