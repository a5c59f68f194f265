package cluster

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
)

// Span is the key range [Start, End) of a node's Badger that one group
// owns. End is required: a group never owns "everything after".
type Span struct {
	Start, End []byte
}

// PrefixSpan is the span of every key that starts with prefix.
func PrefixSpan(prefix []byte) Span {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return Span{Start: append([]byte(nil), prefix...), End: end[:i+1]}
		}
	}
	panic("cluster: PrefixSpan of an empty or all-0xff prefix has no end")
}

// Contains reports whether key is in the span.
func (s Span) Contains(key []byte) bool {
	return bytes.Compare(key, s.Start) >= 0 && bytes.Compare(key, s.End) < 0
}

func (s Span) overlaps(o Span) bool {
	return bytes.Compare(s.Start, o.End) < 0 && bytes.Compare(o.Start, s.End) < 0
}

func (s Span) String() string { return fmt.Sprintf("[%q, %q)", s.Start, s.End) }

// metaSpan holds the groups' own keys (metaPrefix below); no group's data
// may overlap it.
var metaSpan = PrefixSpan([]byte(metaPrefix))

const (
	metaPrefix   = "r/"
	appliedTag   = 'a' // r/a<shardID:8> -> applied index (uint64 BE)
	restoringTag = 's' // r/s<shardID:8> -> present while a snapshot is being restored
	nonVotingTag = 'v' // r/v<shardID:8> -> replica ID (uint64 BE) that joined the group non-voting
	droppingTag  = 'd' // r/d<shardID:8> -> replica ID (uint64 BE) whose data DropGroup is deleting
)

func appliedKey(shardID uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{metaPrefix[0], metaPrefix[1], appliedTag}, shardID)
}

func restoringKey(shardID uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{metaPrefix[0], metaPrefix[1], restoringTag}, shardID)
}

func nonVotingKey(shardID uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{metaPrefix[0], metaPrefix[1], nonVotingTag}, shardID)
}

func droppingKey(shardID uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{metaPrefix[0], metaPrefix[1], droppingTag}, shardID)
}

// checkSpans validates a group's spans and returns them sorted by Start:
// each non-empty, none overlapping another or the metadata prefix.
func checkSpans(spans []Span) ([]Span, error) {
	if len(spans) == 0 {
		return nil, fmt.Errorf("a group needs at least one span")
	}
	out := make([]Span, len(spans))
	for i, s := range spans {
		if len(s.End) == 0 || bytes.Compare(s.Start, s.End) >= 0 {
			return nil, fmt.Errorf("span %v is empty or has no end", s)
		}
		if s.overlaps(metaSpan) {
			return nil, fmt.Errorf("span %v overlaps the group metadata prefix %q", s, metaPrefix)
		}
		out[i] = Span{Start: append([]byte(nil), s.Start...), End: append([]byte(nil), s.End...)}
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i].Start, out[j].Start) < 0 })
	for i := 1; i < len(out); i++ {
		if out[i-1].overlaps(out[i]) {
			return nil, fmt.Errorf("spans %v and %v overlap", out[i-1], out[i])
		}
	}
	return out, nil
}

// inSpans reports whether key is in one of spans (sorted by Start).
func inSpans(spans []Span, key []byte) bool {
	i := sort.Search(len(spans), func(i int) bool { return bytes.Compare(spans[i].End, key) > 0 })
	return i < len(spans) && spans[i].Contains(key)
}

func spansEqual(a, b []Span) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i].Start, b[i].Start) || !bytes.Equal(a[i].End, b[i].End) {
			return false
		}
	}
	return true
}

// DataSpans are every key of a node's Badger but the groups' own
// metadata (r/): the spans of a group that holds all of Parsec's data.
var DataSpans = []Span{{Start: []byte{0}, End: []byte(metaPrefix)}, {Start: PrefixSpan([]byte(metaPrefix)).End, End: []byte{0xff, 0xff}}}
