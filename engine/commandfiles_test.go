package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// TestOneFilePerCommand: every handler in the command table is declared in
// cmd_<name>.go, named (lower case) for one of the commands it serves, and
// no cmd_ file declares two handlers — so a command is found from its name.
func TestOneFilePerCommand(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	fileOf := map[string]string{} // method name -> file
	for _, p := range pkgs {
		for path, f := range p.Files {
			for _, d := range f.Decls {
				if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv != nil && strings.HasPrefix(fn.Name.Name, "cmd") {
					fileOf[fn.Name.Name] = filepath.Base(path)
				}
			}
		}
	}
	served := map[string][]string{} // handler -> command names
	for name, c := range newCommandTable() {
		full := runtime.FuncForPC(reflect.ValueOf(c.run).Pointer()).Name()
		h := full[strings.LastIndex(full, ".")+1:]
		h = strings.TrimSuffix(h, "-fm")
		served[h] = append(served[h], name)
	}
	handlersIn := map[string][]string{}
	for h, names := range served {
		file, ok := fileOf[h]
		if !ok {
			t.Errorf("handler %s (of %v) not found", h, names)
			continue
		}
		handlersIn[file] = append(handlersIn[file], h)
		match := false
		for _, n := range names {
			if file == "cmd_"+strings.ToLower(n)+".go" {
				match = true
			}
		}
		if !match {
			t.Errorf("handler %s of %v is in %s, want cmd_<one of those names>.go", h, names, file)
		}
	}
	for file, hs := range handlersIn {
		if len(hs) > 1 {
			t.Errorf("%s declares %d handlers %v: one file per command", file, len(hs), hs)
		}
	}
}
