package agg

import (
	"context"

	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// stage is one compiled pipeline stage.
type stage interface {
	// name is the stage's name ("$match").
	name() string
	// open starts a run of the stage over in; all per-run state is made
	// here, so one compiled stage may run many times concurrently.
	open(in Iterator) Iterator
	// spec is the stage as explain shows it: {<name>: <spec>}.
	spec() bsoncore.Document
}

// Pipeline is a compiled pipeline.
type Pipeline struct {
	env    *env
	stages []stage
}

// where a pipeline is parsed: its restrictions differ.
type where int

const (
	topLevel where = iota
	inFacet
	inLookup
	inUnionWith
)

// parser compiles stages by name.
type parser func(p *pipelineParser, arg bsoncore.Value, spec bsoncore.Document) ([]stage, error)

type pipelineParser struct {
	env   *env
	where where
	first bool // the stage being parsed is the pipeline's first
}

// stageParsers maps every stage Parsec runs to its parser. It is built
// once by init and never changed.
var stageParsers map[string]parser

func init() {
	stageParsers = map[string]parser{
		"$match": parseMatch, "$project": parseProject, "$addFields": parseAddFields, "$set": parseAddFields,
		"$unset": parseUnset, "$group": parseGroup, "$sort": parseSort, "$limit": parseLimit, "$skip": parseSkip,
		"$count": parseCount, "$unwind": parseUnwind, "$lookup": parseLookup, "$facet": parseFacet,
		"$bucket": parseBucket, "$bucketAuto": parseBucketAuto, "$sortByCount": parseSortByCount,
		"$replaceRoot": parseReplaceRoot, "$replaceWith": parseReplaceRoot, "$sample": parseSample,
		"$out": parseOut, "$merge": parseMerge, "$unionWith": parseUnionWith, "$redact": parseRedact,
		"$graphLookup": parseGraphLookup, "$setWindowFields": parseSetWindowFields, "$documents": parseDocuments,
		"$collStats": parseCollStats, "$indexStats": parseIndexStats, "$currentOp": parseNoOutput,
		"$listLocalSessions": parseNoOutput, "$listSessions": parseNoOutput, "$listSampledQueries": parseNoOutput, "$fill": parseFill, "$densify": parseDensify,
	}
}

// unsupportedStages are MongoDB stages Parsec does not run, with why.
var unsupportedStages = map[string]string{
	"$geoNear":                     "geospatial indexes do not exist in Parsec",
	"$changeStream":                "change streams are not supported by Parsec",
	"$changeStreamSplitLargeEvent": "change streams are not supported by Parsec",
	"$search":                      "Atlas Search is only available on MongoDB Atlas",
	"$searchMeta":                  "Atlas Search is only available on MongoDB Atlas",
	"$vectorSearch":                "Atlas Vector Search is only available on MongoDB Atlas",
	"$listSearchIndexes":           "Atlas Search is only available on MongoDB Atlas",
	"$planCacheStats":              "Parsec has no plan cache",
	"$shardedDataDistribution":     "use customAction: \"GetPartitionStats\"",
	"$queryStats":                  "not supported by Parsec",
	"$listCatalog":                 "not supported by Parsec yet",
}

// firstOnly are stages that must open a pipeline.
var firstOnly = map[string]bool{
	"$documents": true, "$collStats": true, "$indexStats": true, "$currentOp": true,
	"$listLocalSessions": true, "$listSessions": true, "$listSampledQueries": true,
}

// lastOnly are stages that must close a pipeline.
var lastOnly = map[string]bool{"$out": true, "$merge": true}

// notInFacet are stages a $facet sub-pipeline may not hold.
var notInFacet = map[string]bool{
	"$collStats": true, "$facet": true, "$indexStats": true, "$out": true, "$merge": true,
	"$currentOp": true, "$listLocalSessions": true, "$listSessions": true, "$documents": true,
	"$listSampledQueries": true,
}

// Parse compiles a pipeline, an array of stage documents (BSON array
// bytes). opts.Let is evaluated here, once.
func Parse(pipeline bsoncore.Document, opts Options) (*Pipeline, error) {
	e, err := newEnv(opts)
	if err != nil {
		return nil, err
	}
	return parsePipeline(e, pipeline, topLevel)
}

func parsePipeline(e *env, pipeline bsoncore.Document, w where) (*Pipeline, error) {
	p := &Pipeline{env: e}
	pipeline = clone(pipeline)
	vals, err := bsoncore.Array(pipeline).Values()
	if err != nil {
		return nil, langerr.FailedToParse("invalid pipeline: %v", err)
	}
	for i, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			return nil, langerr.New(ErrStageNotObject, "Each element of the 'pipeline' array must be an object")
		}
		elems, _ := d.Elements()
		if len(elems) != 1 {
			return nil, langerr.New(ErrStageFields, "A pipeline stage specification object must contain exactly one field.")
		}
		name := elems[0].Key()
		parse, ok := stageParsers[name]
		if !ok {
			if why, known := unsupportedStages[name]; known {
				return nil, langerr.New(langerr.ErrNotImplemented, "%s is not supported by Parsec: %s", name, why)
			}
			return nil, langerr.New(ErrUnknownStage, "Unrecognized pipeline stage name: '%s'", name)
		}
		switch {
		case w == inFacet && notInFacet[name]:
			return nil, langerr.New(ErrNotInFacet, "%s is not allowed to be used within a $facet stage", name)
		case w == inLookup && lastOnly[name]:
			return nil, langerr.New(ErrNotInLookup, "%s is not allowed to be used within a $lookup stage", name)
		case w == inUnionWith && lastOnly[name]:
			return nil, langerr.New(ErrNotInUnionWith, "%s is not allowed to be used within a $unionWith stage", name)
		case firstOnly[name] && i != 0:
			return nil, langerr.New(ErrMustBeFirst, "%s is only valid as the first stage in a pipeline", name)
		case lastOnly[name] && i != len(vals)-1:
			return nil, langerr.New(ErrMustBeLast, "%s can only be the final stage in the pipeline", name)
		}
		pp := &pipelineParser{env: e, where: w, first: i == 0}
		st, err := parse(pp, elems[0].Value(), d)
		if err != nil {
			return nil, err
		}
		p.stages = append(p.stages, st...)
	}
	p.optimize()
	return p, nil
}

// optimize lets a $sort keep only what a following $limit (after any
// $skip) passes on.
func (p *Pipeline) optimize() {
	for i, st := range p.stages {
		s, ok := st.(*sortStage)
		if !ok {
			continue
		}
		skip := int64(0)
	scan:
		for _, next := range p.stages[i+1:] {
			switch n := next.(type) {
			case *skipStage:
				skip += n.n
			case *limitStage:
				s.limit = n.n + skip
				break scan
			default:
				break scan
			}
		}
	}
}

// Run runs the whole pipeline over one stream.
func (p *Pipeline) Run(in Iterator) Iterator {
	it := in
	for _, s := range p.stages {
		it = s.open(it)
	}
	return it
}

// Stages is how many stages the pipeline has.
func (p *Pipeline) Stages() int { return len(p.stages) }

// FirstStage names the first stage ("" for an empty pipeline).
func (p *Pipeline) FirstStage() string {
	if len(p.stages) == 0 {
		return ""
	}
	return p.stages[0].name()
}

// NeedsInput reports whether the pipeline reads the collection it runs
// on: false when it starts with a stage that makes its own documents
// ($documents, $collStats, $indexStats, $currentOp, ...).
func (p *Pipeline) NeedsInput() bool {
	if len(p.stages) == 0 {
		return true
	}
	_, own := p.stages[0].(sourceStage)
	return !own
}

// sourceStage marks stages that ignore their input and make documents.
type sourceStage interface{ source() }

// Writes reports whether the pipeline ends in $out or $merge.
func (p *Pipeline) Writes() bool {
	if len(p.stages) == 0 {
		return false
	}
	switch p.stages[len(p.stages)-1].(type) {
	case *outStage, *mergeStage:
		return true
	}
	return false
}

// LeadingMatch is the filter of the pipeline's first stage when it is a
// $match (nil otherwise): the engine routes with it.
func (p *Pipeline) LeadingMatch() bsoncore.Document {
	if len(p.stages) == 0 {
		return nil
	}
	if m, ok := p.stages[0].(*matchStage); ok {
		return m.filterDoc
	}
	return nil
}

// Collation is the collation the pipeline compares strings by; nil:
// simple.
func (p *Pipeline) Collation() *value.Collator { return p.env.opts.Collation }

// Explain lists the stages as explain shows them.
func (p *Pipeline) Explain() []bsoncore.Document {
	out := make([]bsoncore.Document, len(p.stages))
	for i, s := range p.stages {
		out[i] = s.spec()
	}
	return out
}

// runAll runs a pipeline on in and collects its output.
func (p *Pipeline) runAll(ctx context.Context, in Iterator) ([]bsoncore.Document, error) {
	return collect(ctx, p.Run(in))
}

// specOf builds {name: arg}.
func specOf(name string, arg bsoncore.Value) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendValue(name, arg).Build()
}
