package update

import (
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// node is a value of a document being updated. It stays raw (the bytes of
// the original document) until an update needs to look inside it; then obj
// or arr holds its expanded fields or elements.
type node struct {
	raw bsoncore.Value
	obj *object // expanded embedded document
	arr *array  // expanded array
}

// object is an expanded document: its fields in order. Names are the
// key bytes of the original document (or of the update), not copied.
type object struct {
	names [][]byte
	vals  []*node
}

// array is an expanded array.
type array struct {
	elems []*node
}

func rawNode(v bsoncore.Value) *node { return &node{raw: v} }

func objectNode(o *object) *node { return &node{obj: o} }

func arrayNode(a *array) *node { return &node{arr: a} }

// nullNode is a fresh BSON null.
func nullNode() *node { return &node{raw: bsoncore.Value{Type: bsoncore.TypeNull}} }

// typ is the BSON type of n.
func (n *node) typ() bsoncore.Type {
	switch {
	case n.obj != nil:
		return bsoncore.TypeEmbeddedDocument
	case n.arr != nil:
		return bsoncore.TypeArray
	}
	return n.raw.Type
}

func (n *node) isObject() bool { return n.typ() == bsoncore.TypeEmbeddedDocument }
func (n *node) isArray() bool  { return n.typ() == bsoncore.TypeArray }

// object expands n, an embedded document, in place.
func (n *node) object() *object {
	if n.obj == nil {
		n.obj = parseObject(n.raw.Data)
		n.raw = bsoncore.Value{}
	}
	return n.obj
}

// array expands n, an array, in place.
func (n *node) array() *array {
	if n.arr == nil {
		o := parseObject(n.raw.Data)
		n.arr = &array{elems: o.vals}
		n.raw = bsoncore.Value{}
	}
	return n.arr
}

// value returns n as a raw value, encoding it if it was expanded.
func (n *node) value() bsoncore.Value {
	switch {
	case n.obj != nil:
		return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: n.obj.encode(nil)}
	case n.arr != nil:
		return bsoncore.Value{Type: bsoncore.TypeArray, Data: n.arr.encode(nil)}
	}
	return n.raw
}

// clone copies n deeply enough that changing the copy leaves n as it was.
// Raw bytes are shared: they are never written to.
func (n *node) clone() *node {
	switch {
	case n.obj != nil:
		o := &object{names: append([][]byte(nil), n.obj.names...), vals: make([]*node, len(n.obj.vals))}
		for i, v := range n.obj.vals {
			o.vals[i] = v.clone()
		}
		return objectNode(o)
	case n.arr != nil:
		a := &array{elems: make([]*node, len(n.arr.elems))}
		for i, v := range n.arr.elems {
			a.elems[i] = v.clone()
		}
		return arrayNode(a)
	}
	return rawNode(n.raw)
}

// parseObject splits an encoded document (or array) into its fields. The
// input has been validated by the caller (it comes from a stored document
// or a parsed command), so malformed tails are simply dropped.
func parseObject(doc []byte) *object {
	o := &object{}
	if len(doc) < 5 {
		return o
	}
	rem := doc[4 : len(doc)-1]
	n := 0
	for r := rem; len(r) > 0; n++ {
		_, rest, ok := bsoncore.ReadElement(r)
		if !ok {
			break
		}
		r = rest
	}
	// One allocation for all the nodes, one each for the two slices.
	nodes := make([]node, n)
	o.names = make([][]byte, 0, n)
	o.vals = make([]*node, 0, n)
	for i := 0; i < n; i++ {
		e, rest, _ := bsoncore.ReadElement(rem)
		o.names = append(o.names, e.KeyBytes())
		nodes[i].raw = e.Value()
		o.vals = append(o.vals, &nodes[i])
		rem = rest
	}
	return o
}

func (o *object) index(name string) int {
	for i, n := range o.names {
		if string(n) == name {
			return i
		}
	}
	return -1
}

func (o *object) get(name string) *node {
	if i := o.index(name); i >= 0 {
		return o.vals[i]
	}
	return nil
}

// set replaces the value of name, or appends the field.
func (o *object) set(name string, v *node) {
	if i := o.index(name); i >= 0 {
		o.vals[i] = v
		return
	}
	o.names = append(o.names, []byte(name))
	o.vals = append(o.vals, v)
}

func (o *object) remove(name string) {
	if i := o.index(name); i >= 0 {
		o.names = append(o.names[:i], o.names[i+1:]...)
		o.vals = append(o.vals[:i], o.vals[i+1:]...)
	}
}

// encode appends o as a BSON document.
func (o *object) encode(dst []byte) []byte {
	start, dst := bsoncore.AppendDocumentStart(dst)
	for i, name := range o.names {
		dst = appendNodeKey(dst, name, o.vals[i])
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, start)
	return dst
}

// encode appends a as a BSON array.
func (a *array) encode(dst []byte) []byte {
	start, dst := bsoncore.AppendArrayStart(dst)
	var key [20]byte
	for i, v := range a.elems {
		dst = appendNode(dst, string(strconv.AppendInt(key[:0], int64(i), 10)), v)
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, start)
	return dst
}

// appendNodeKey is appendNode with the name as bytes.
func appendNodeKey(dst []byte, name []byte, n *node) []byte {
	dst = append(dst, byte(n.typ()))
	dst = append(dst, name...)
	dst = append(dst, 0)
	return appendNodeValue(dst, n)
}

func appendNode(dst []byte, name string, n *node) []byte {
	dst = append(dst, byte(n.typ()))
	dst = append(dst, name...)
	dst = append(dst, 0)
	return appendNodeValue(dst, n)
}

func appendNodeValue(dst []byte, n *node) []byte {
	switch {
	case n.obj != nil:
		return n.obj.encode(dst)
	case n.arr != nil:
		return n.arr.encode(dst)
	}
	return append(dst, n.raw.Data...)
}

// size is the encoded size of n's value.
func (n *node) size() int {
	switch {
	case n.obj != nil:
		s := 5
		for i, name := range n.obj.names {
			s += 2 + len(name) + n.obj.vals[i].size()
		}
		return s
	case n.arr != nil:
		s := 5
		for i, v := range n.arr.elems {
			s += 2 + len(strconv.Itoa(i)) + v.size()
		}
		return s
	}
	return len(n.raw.Data)
}
