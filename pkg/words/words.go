// Package words phrases counts in English for what gpuops prints: "1 node",
// "2 nodes", never "1 nodes".
package words

import "strconv"

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
