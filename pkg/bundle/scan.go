package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
)

// A large input is one JSON List (collect's, kubectl's -o json) whose items
// are most of its bytes, and encoding/json scans a value whole before it
// decodes it: decoding the document, then the List's items as raw values,
// then each item, scanned the bytes of every item five times before the
// decoding proper. The scanner below finds the documents of a JSON input,
// a List's items and an item's apiVersion and kind without decoding them,
// so that encoding/json reads each item once, as its type (decodeObject).
// It does not validate what it passes over: each value it hands on is
// either decoded (which validates it) or checked with json.Valid.

// scanner walks JSON at i.
type scanner struct {
	doc []byte
	i   int
}

func (s *scanner) ws() {
	for s.i < len(s.doc) && (s.doc[s.i] == ' ' || s.doc[s.i] == '\n' || s.doc[s.i] == '\t' || s.doc[s.i] == '\r') {
		s.i++
	}
}

// is passes c, after white space, or reports that it is not there.
func (s *scanner) is(c byte) bool {
	s.ws()
	if s.i < len(s.doc) && s.doc[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads a string without escapes, or fails.
func (s *scanner) str() (string, bool) {
	s.ws()
	if s.i >= len(s.doc) || s.doc[s.i] != '"' {
		return "", false
	}
	end := bytes.IndexByte(s.doc[s.i+1:], '"')
	if end < 0 || bytes.IndexByte(s.doc[s.i+1:s.i+1+end], '\\') >= 0 {
		return "", false
	}
	v := string(s.doc[s.i+1 : s.i+1+end])
	s.i += end + 2
	return v, true
}

// value passes one value and returns its bytes: an object or array to its
// closing bracket, a string to its closing quote, a literal up to the next
// delimiter.
func (s *scanner) value() ([]byte, bool) {
	s.ws()
	start, depth, inString := s.i, 0, false
	for ; s.i < len(s.doc); s.i++ {
		if inString {
			// most of an input's bytes are in strings: on to the next
			// quote or backslash at once
			next := bytes.IndexByte(s.doc[s.i:], '"')
			if next < 0 {
				break
			}
			if escape := bytes.IndexByte(s.doc[s.i:s.i+next], '\\'); escape >= 0 {
				next = escape
			}
			s.i += next
		}
		c := s.doc[s.i]
		switch {
		case inString && c == '\\':
			s.i++
		case c == '"':
			inString = !inString
			if !inString && depth == 0 {
				s.i++
				return s.doc[start:s.i], true
			}
		case inString:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth--; depth == 0 {
				s.i++
				return s.doc[start:s.i], true
			}
			if depth < 0 {
				return s.doc[start:s.i], s.i > start
			}
		case depth == 0 && (c == ',' || c == ' ' || c == '\n' || c == '\t' || c == '\r'):
			return s.doc[start:s.i], s.i > start
		}
	}
	return s.doc[start:s.i], depth == 0 && !inString && s.i > start
}

// members calls fn on each key of the object at i and passes its value,
// which fn may read (then it returns true) or leave to be passed.
func (s *scanner) members(fn func(key string) (bool, error)) error {
	if !s.is('{') {
		return errNotJSON
	}
	if s.is('}') {
		return nil
	}
	for {
		key, ok := s.str()
		if !ok || !s.is(':') {
			return errNotJSON
		}
		read, err := fn(key)
		if err != nil {
			return err
		}
		if !read {
			if v, ok := s.value(); !ok || !json.Valid(v) {
				return errNotJSON
			}
		}
		if s.is('}') {
			return nil
		}
		if !s.is(',') {
			return errNotJSON
		}
	}
}

// errNotJSON is what the scanner says of what it cannot follow; the caller
// then leaves the input to encoding/json, which says what is wrong.
var errNotJSON = errors.New("not JSON the scanner follows")

// typeMeta reads an object's apiVersion and kind off its top-level keys,
// stopping once it has both (most objects begin with them), without
// decoding the rest: found is false where it cannot tell so cheaply (an
// escape in a key or those values, a key missing, JSON it does not
// follow), and the caller decodes the object's head instead. A List's
// items would otherwise be scanned once more each before their decoding.
func typeMeta(doc []byte) (apiVersion, kind string, found bool) {
	s := scanner{doc: doc}
	var haveVersion, haveKind bool
	done := errors.New("done")
	err := s.members(func(key string) (bool, error) {
		var ok bool
		switch key {
		case "apiVersion":
			apiVersion, ok = s.str()
			haveVersion = ok
		case "kind":
			kind, ok = s.str()
			haveKind = ok
		default:
			_, ok = s.value()
		}
		switch {
		case !ok:
			return true, errNotJSON
		case haveVersion && haveKind:
			return true, done
		}
		return true, nil
	})
	return apiVersion, kind, err == done
}

// listItems returns the items of a List, each an object's bytes, with the
// List's other values checked as JSON; false where the scanner cannot
// follow it.
func listItems(doc []byte) ([][]byte, bool) {
	s := scanner{doc: doc}
	var items [][]byte
	err := s.members(func(key string) (bool, error) {
		if key != "items" {
			return false, nil
		}
		if !s.is('[') {
			return true, errNotJSON
		}
		if s.is(']') {
			return true, nil
		}
		for {
			s.ws()
			if s.i >= len(s.doc) || s.doc[s.i] != '{' {
				return true, errNotJSON
			}
			it, ok := s.value()
			if !ok {
				return true, errNotJSON
			}
			items = append(items, it)
			if s.is(']') {
				return true, nil
			}
			if !s.is(',') {
				return true, errNotJSON
			}
		}
	})
	s.ws()
	return items, err == nil && s.i == len(s.doc)
}

// documents returns the top-level values of a JSON stream, each an
// object's bytes or null; false where the scanner cannot follow it.
func documents(data []byte) ([][]byte, bool) {
	s := scanner{doc: data}
	var docs [][]byte
	for s.ws(); s.i < len(s.doc); s.ws() {
		v, ok := s.value()
		if !ok || v[0] != '{' && string(v) != "null" {
			return nil, false
		}
		docs = append(docs, v)
	}
	return docs, true
}
