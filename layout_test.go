package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/parsecdb/parsec"

// allowedImports lists, per package directory, the Parsec packages it may
// import (DESIGN.md: dependency direction). Directories not listed may
// import any Parsec package except main.
var allowedImports = map[string][]string{
	"wire":         {},
	"shard":        {"engine/value"},
	"ru":           {},
	"engine/value": {},
	"engine/query": {"engine/value", "engine/langerr", "engine/expr"},
	"engine/expr":  {"engine/value", "engine/langerr"},
	"engine/store": {"engine/value", "shard", "engine/kv", "engine/kv/badgerkv"},
	// The key-value seam under the document layer, and its Badger
	// implementation: nothing else of ours.
	"engine/kv":          {},
	"engine/kv/badgerkv": {"engine/kv"},
	// The storage seam names store's data types and nothing else.
	"engine/storage": {"engine/store", "engine/value", "shard"},
	// Planning reads through the seam; the command layer maps its errors.
	"engine/plan": {"engine/store", "engine/storage", "engine/query", "engine/value", "engine/agg", "shard"},

	// Request-unit billing: the pure model, the seam and its data types;
	// never the command layer.
	"engine/billing": {"ru", "engine/storage", "engine/store", "engine/value", "shard"},

	"engine/update": {"engine/value", "engine/langerr", "engine/query", "engine/expr"},
	"engine/agg":    {"engine/value", "engine/langerr", "engine/query", "engine/expr"},

	// The language packages' error family: imports none of ours.
	"engine/langerr": {},
	// Sessions, transactions, snapshots and cursors keep their state
	// over the storage seam, and never import the command layer.
	"engine/sessions": {"engine/storage", "engine/store", "engine/value"},

	// The replicated partitions' state machine on dragonboat: raw key
	// batches, and the kv seam it implements over them.
	"cluster": {"engine/kv", "engine/kv/badgerkv"},

	// The HTTP console reads the server through the engine's methods
	// only: not its store, not wire.
	"console": {"engine"},
}

// TestLayering keeps the architecture of DESIGN.md: wire imports nothing of
// ours, shard and ru are pure, the language packages and the store never
// import the command layer, and nothing imports main.
func TestLayering(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == module {
				t.Errorf("%s imports package main", path)
				continue
			}
			ours, ok := strings.CutPrefix(p, module+"/")
			if !ok {
				continue
			}
			allowed, restricted := allowedImports[dir]
			if !restricted {
				continue
			}
			okImport := false
			for _, a := range allowed {
				if ours == a {
					okImport = true
				}
			}
			if !okImport {
				t.Errorf("%s (package %s) imports %s, which DESIGN.md's layering forbids", path, dir, ours)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestStorageSeam: the command layer (and its planner, engine/plan)
// reaches data only through the interfaces of engine/storage. Its non-test files neither import Badger
// nor open, hold or type-assert a *store.Store (store's data types, errors
// and key builders are the seam's vocabulary and stay in use).
func TestStorageSeam(t *testing.T) {
	paths, err := filepath.Glob("engine/*.go")
	if err != nil {
		t.Fatal(err)
	}
	planPaths, err := filepath.Glob("engine/plan/*.go")
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, planPaths...)
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, banned := range []string{"github.com/dgraph-io/badger", "*store.Store", "store.Open(", "*store.Txn", "*store.Transaction", "*store.Snapshot"} {
			if strings.Contains(string(src), banned) {
				t.Errorf("%s uses %s: the engine reaches data only through engine/storage", path, banned)
			}
		}
	}
}

// badgerImporters are the directories whose non-test files may import
// Badger: the key-value implementation of one node, and the replicated
// partitions' state machine (which applies raw batches to a node's
// Badger).
var badgerImporters = map[string]bool{"engine/kv/badgerkv": true, "cluster": true}

// TestKVSeam: the document layer (engine/store) keeps its keys through
// engine/kv; only the packages in badgerImporters name Badger.
func TestKVSeam(t *testing.T) {
	for _, dir := range packageDirs(t) {
		paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range paths {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if strings.HasPrefix(p, "github.com/dgraph-io/badger") && !badgerImporters[dir] {
					t.Errorf("%s imports %s: only %v may (storage goes through engine/kv)", path, p, badgerImporters)
				}
			}
		}
	}
}

// packageDirs are the directories of the tree that hold a Go package (not
// only tests), as module-relative paths ("." for the root).
func packageDirs(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	var dirs []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if !seen[dir] {
			seen[dir] = true
			dirs = append(dirs, dir)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// TestPackageDocs: every package states its contract in a doc comment.
func TestPackageDocs(t *testing.T) {
	for _, dir := range packageDirs(t) {
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		documented := false
		for _, p := range pkgs {
			for _, f := range p.Files {
				if f.Doc != nil && len(strings.TrimSpace(f.Doc.Text())) > 40 {
					documented = true
				}
			}
		}
		if !documented {
			t.Errorf("package %s has no doc comment stating its contract", dir)
		}
	}
}
