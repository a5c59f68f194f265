package update

import (
	"strings"
)

// component kinds of an update path.
const (
	posNone     = iota
	posDollar   // "$": the array index the query matched
	posAll      // "$[]": every element
	posFiltered // "$[<id>]": the elements matching array filter <id>
)

// componentKind classifies one path component; for "$[<id>]" it returns id.
func componentKind(c string) (int, string) {
	switch {
	case c == "$":
		return posDollar, ""
	case c == "$[]":
		return posAll, ""
	case strings.HasPrefix(c, "$[") && strings.HasSuffix(c, "]"):
		return posFiltered, c[2 : len(c)-1]
	}
	return posNone, ""
}

// splitPath validates an update path and splits it at its dots.
func splitPath(path string) ([]string, error) {
	if path == "" {
		return nil, errorf(ErrEmptyFieldName, "An empty update path is not valid.")
	}
	parts := strings.Split(path, ".")
	dollars := 0
	for i, p := range parts {
		if p == "" {
			return nil, errorf(ErrEmptyFieldName, "The update path '%s' contains an empty field name, which is not allowed.", path)
		}
		kind, _ := componentKind(p)
		switch kind {
		case posDollar:
			dollars++
			if dollars > 1 {
				return nil, errorf(ErrBadValue, "Too many positional (i.e. '$') elements found in path '%s'", path)
			}
			if i == 0 {
				return nil, errorf(ErrBadValue, "Cannot have positional (i.e. '$') element in the first component in path '%s'", path)
			}
		case posAll, posFiltered:
			if i == 0 {
				return nil, errorf(ErrBadValue, "Cannot have array filter identifier (i.e. '$[<id>]') element in the first component in path '%s'", path)
			}
		}
	}
	return parts, nil
}

// isIndex reports whether s is an array index as MongoDB's update paths
// read one: decimal digits without a leading zero (except "0" itself).
func isIndex(s string) bool {
	if s == "" || len(s) > 18 || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func atoi(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}

// compareFieldNames orders the fields an update visits: names that are
// both numbers compare numerically, anything else bytewise (MongoDB 5.0+).
func compareFieldNames(a, b string) int {
	if isIndex(a) && isIndex(b) {
		if len(a) != len(b) {
			if len(a) < len(b) {
				return -1
			}
			return 1
		}
	}
	return strings.Compare(a, b)
}
