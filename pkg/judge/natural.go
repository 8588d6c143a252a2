package judge

import "strings"

// naturalLess orders names the way people count: lab-node-2 before lab-node-10.
// Names are split into runs of digits and non-digits; a digit run sorts before a
// non-digit run, digit runs compare by value, others byte-wise; equal keys fall
// back to the plain string order. The shell scripts sort with the same key (jq).
func naturalLess(a, b string) bool {
	ca, cb := chunks(a), chunks(b)
	for i := 0; i < len(ca) && i < len(cb); i++ {
		if c := compareChunk(ca[i], cb[i]); c != 0 {
			return c < 0
		}
	}
	if len(ca) != len(cb) {
		return len(ca) < len(cb)
	}
	return a < b
}

func chunks(s string) []string {
	var out []string
	for len(s) > 0 {
		n := 1
		for n < len(s) && isDigit(s[n]) == isDigit(s[0]) {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
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
