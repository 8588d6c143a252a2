package judge

import "strings"

// naturalLess orders names the way people count: lab-node-2 before lab-node-10.
// Names are split into runs of digits and non-digits; a digit run sorts before a
// non-digit run, digit runs compare by value, others byte-wise; equal keys fall
// back to the plain string order. The shell scripts sort with the same key (jq).
func naturalLess(a, b string) bool {
	// Walks the runs in place: sorting thousands of nodes must not allocate.
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ea, eb := runEnd(a, i), runEnd(b, j)
		if c := compareChunk(a[i:ea], b[j:eb]); c != 0 {
			return c < 0
		}
		i, j = ea, eb
	}
	if (i < len(a)) != (j < len(b)) {
		return j < len(b) // a ran out of runs first
	}
	return a < b
}

// runEnd is the end of the run of digits or non-digits that starts at s[i].
func runEnd(s string, i int) int {
	n := i + 1
	for n < len(s) && isDigit(s[n]) == isDigit(s[i]) {
		n++
	}
	return n
}

func compareChunk(a, b string) int {
	da, db := isDigit(a[0]), isDigit(b[0])
	switch {
	case da && !db:
		return -1
	case !da && db:
		return 1
	case !da:
		return strings.Compare(a, b)
	}
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
