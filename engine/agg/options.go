package agg

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/parsecdb/parsec/engine/expr"
	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// DefaultMemoryLimit is what a blocking stage may hold (MongoDB's
// internalQueryMaxBlockingSortMemoryUsageBytes and
// internalDocumentSourceGroupMaxMemoryBytes).
const DefaultMemoryLimit = 100 << 20

// Options are what a pipeline runs with besides its input.
type Options struct {
	// DB is the database the pipeline runs in: $lookup, $unionWith,
	// $graphLookup and $out name collections in it.
	DB string
	// Coll is the collection the pipeline runs on ("" for a database
	// aggregate): $collStats and $indexStats describe it.
	Coll string
	// Let holds the command's let: variables (expressions evaluated once,
	// before the first document) that every stage may read.
	Let bsoncore.Document
	// Vars are variables with known values (sub-pipelines of $lookup
	// receive the outer let and the $lookup's own let this way).
	Vars []Var
	// Now is $$NOW and $$CLUSTER_TIME.
	Now time.Time
	// AllowDiskUse lets blocking stages spill past MemoryLimit.
	AllowDiskUse bool
	// MemoryLimit is each blocking stage's budget in bytes (0: the default).
	MemoryLimit int64
	// TempDir holds spill files ("" : the system's).
	TempDir string
	// Collections reads and writes other collections; nil when the
	// caller has none (stages that need it then fail).
	Collections Collections
	// Sessions are what $listLocalSessions and $listSessions list.
	Sessions []bsoncore.Document
	// CurrentOps are what $currentOp lists.
	CurrentOps []bsoncore.Document
	// SampledQueries are what $listSampledQueries lists.
	SampledQueries []bsoncore.Document
	// Seed makes $sample and $rand-free randomness reproducible (0: random).
	Seed uint64
	// Collation compares strings in $match, $sort, $group keys,
	// accumulators, joins and expressions; nil is the simple collation.
	Collation *value.Collator
}

// Var is a variable with a value.
type Var struct {
	Name  string
	Value bsoncore.Value
}

// Collections is what stages need from the engine. Every method may be
// called concurrently.
type Collections interface {
	// Scan streams the documents of db.coll in natural order (empty when
	// the collection does not exist).
	Scan(ctx context.Context, db, coll string) (Iterator, error)
	// Get reads the document of db.coll whose _id is id.
	Get(ctx context.Context, db, coll string, id bsoncore.Value) (bsoncore.Document, bool, error)
	// Insert adds a document (creating the collection); a duplicate _id
	// is an error wrapping ErrDuplicateKey.
	Insert(ctx context.Context, db, coll string, doc bsoncore.Document) error
	// Replace replaces the document whose _id is id.
	Replace(ctx context.Context, db, coll string, id bsoncore.Value, doc bsoncore.Document) error
	// OpenOut starts writing a collection that will replace db.coll when
	// committed ($out).
	OpenOut(ctx context.Context, db, coll string) (OutWriter, error)
	// CollStats answers $collStats with one document per shard (a
	// Parsec server is one shard).
	CollStats(ctx context.Context, db, coll string, spec bsoncore.Document) ([]bsoncore.Document, error)
	// IndexStats answers $indexStats with one document per index.
	IndexStats(ctx context.Context, db, coll string) ([]bsoncore.Document, error)
}

// OutWriter fills the collection $out produces.
type OutWriter interface {
	Insert(ctx context.Context, doc bsoncore.Document) error
	// Commit replaces the target with what was written; Abort drops it.
	Commit(ctx context.Context) error
	Abort()
}

// env is what a pipeline's stages are compiled and run with: the scope
// of its variables and their values.
type env struct {
	opts   Options
	scope  *expr.Scope
	values []bsoncore.Value // by slot; the let variables' values
	randMu sync.Mutex
	rng    *rand.Rand
}

func newEnv(opts Options) (*env, error) {
	if opts.MemoryLimit <= 0 {
		opts.MemoryLimit = DefaultMemoryLimit
	}
	if opts.Now.IsZero() {
		opts.Now = time.Unix(0, 0).UTC()
	}
	e := &env{opts: opts, scope: expr.NewScope()}
	e.scope.SetCollation(opts.Collation)
	for _, v := range opts.Vars {
		e.scope.Declare(v.Name)
		e.values = append(e.values, cloneValue(v.Value))
	}
	if len(opts.Let) > 0 {
		let := clone(opts.Let)
		if err := let.Validate(); err != nil {
			return nil, langerr.FailedToParse("let: %v", err)
		}
		elems, _ := let.Elements()
		empty := bsoncore.NewDocumentBuilder().Build()
		for _, el := range elems {
			if err := expr.CheckLetParameterName(el.Key()); err != nil {
				return nil, err
			}
			x, err := expr.Compile(el.Value(), e.scope)
			if err != nil {
				return nil, err
			}
			v, err := x.Eval(&expr.Context{Root: empty, Vars: append([]bsoncore.Value(nil), e.values...), Now: opts.Now})
			if err != nil {
				return nil, err
			}
			e.scope.Declare(el.Key())
			e.values = append(e.values, cloneValue(v))
		}
	}
	seed := opts.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	e.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return e, nil
}

// context makes an evaluation context with the variables' values.
func (e *env) context() *expr.Context {
	vars := make([]bsoncore.Value, max(e.scope.Slots(), len(e.values)))
	copy(vars, e.values)
	return &expr.Context{Vars: vars, Now: e.opts.Now}
}

// vars lists the variables with their values (for sub-pipelines).
func (e *env) vars() []Var {
	return e.varsWith(nil, nil)
}

func (e *env) varsWith(names []string, vals []bsoncore.Value) []Var {
	var out []Var
	declared := e.declaredNames()
	for i, n := range declared {
		if i < len(e.values) {
			out = append(out, Var{n, e.values[i]})
		}
	}
	for i, n := range names {
		out = append(out, Var{n, vals[i]})
	}
	return out
}

func (e *env) declaredNames() []string {
	names := make([]string, 0, len(e.opts.Vars))
	for _, v := range e.opts.Vars {
		names = append(names, v.Name)
	}
	if len(e.opts.Let) > 0 {
		elems, _ := bsoncore.Document(e.opts.Let).Elements()
		for _, el := range elems {
			names = append(names, el.Key())
		}
	}
	return names
}

func (e *env) compile(v bsoncore.Value) (expr.Expression, error) {
	return expr.Compile(v, e.scope)
}

func cloneValue(v bsoncore.Value) bsoncore.Value {
	return bsoncore.Value{Type: v.Type, Data: append([]byte(nil), v.Data...)}
}
