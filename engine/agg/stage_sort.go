package agg

import (
	"context"

	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/query"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// sortStage is $sort. A following $limit (after $skip) bounds what it
// keeps (limit).
type sortStage struct {
	env   *env
	sort  *query.Sort
	limit int64
	raw   bsoncore.Document
}

func parseSort(p *pipelineParser, arg bsoncore.Value, raw bsoncore.Document) ([]stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, langerr.New(ErrSortNotObject, "the $sort key specification must be an object")
	}
	if len(d) <= 5 {
		return nil, langerr.New(ErrSortEmpty, "$sort stage must have at least one sort key")
	}
	s, err := query.CompileSort(d)
	if err != nil {
		return nil, err
	}
	s = s.WithCollation(p.env.opts.Collation)
	if _, natural := s.Natural(); natural {
		return nil, langerr.BadValue("$natural is not allowed in $sort; use a hint")
	}
	return []stage{&sortStage{env: p.env, sort: s, raw: raw}}, nil
}

func (*sortStage) name() string { return "$sort" }

func (s *sortStage) spec() bsoncore.Document {
	if s.limit == 0 {
		return s.raw
	}
	return bsoncore.NewDocumentBuilder().AppendDocument("$sort", bsoncore.NewDocumentBuilder().
		AppendDocument("sortKey", s.raw.Index(0).Value().Document()).
		AppendInt64("limit", s.limit).Build()).Build()
}

func (s *sortStage) newSorter() *sorter {
	return newSorter(s.env, "$sort", s.sort.Keys, s.sort.CompareKeys, s.limit)
}

func (s *sortStage) open(in Iterator) Iterator {
	var out Iterator
	st := s.newSorter()
	return &funcIter{next: func(ctx context.Context) (bsoncore.Document, error) {
		if out == nil {
			if err := drain(ctx, in, st.add); err != nil {
				return nil, err
			}
			it, err := st.iterator()
			if err != nil {
				return nil, err
			}
			out = it
		}
		return out.Next(ctx)
	}, close: func() {
		in.Close()
		st.close()
		if out != nil {
			out.Close()
		}
	}}
}
