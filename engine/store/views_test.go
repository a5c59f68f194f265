package store

import (
	"errors"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func pipelineOf(t *testing.T, stages ...bson.D) bson.RawArray {
	t.Helper()
	b := bsoncore.NewArrayBuilder()
	for _, st := range stages {
		raw, err := bson.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		b.AppendDocument(raw)
	}
	return bson.RawArray(b.Build())
}

func viewNames(vs []*ViewDefinition) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Name)
	}
	return out
}

// A name is a collection or a view, never both, whichever way it is
// taken; views survive a restart and go with their database.
func TestViewsShareNamesWithCollections(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir)
	mustCreate(t, s, "db", "c")
	match := pipelineOf(t, bson.D{{Key: "$match", Value: bson.D{{Key: "a", Value: 1}}}})
	if _, err := s.CreateView(ViewDefinition{DB: "db", Name: "c", ViewOn: "x"}); !errors.Is(err, ErrExists) {
		t.Errorf("view over a collection's name: err = %v, want ErrExists", err)
	}
	if _, err := s.CreateView(ViewDefinition{DB: "db", Name: "v", ViewOn: "c", Pipeline: match}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateView(ViewDefinition{DB: "db", Name: "v", ViewOn: "c"}); !errors.Is(err, ErrExists) {
		t.Errorf("view twice: err = %v, want ErrExists", err)
	}
	if _, err := s.CreateCollection("db", "v", nil); !errors.Is(err, ErrExists) {
		t.Errorf("collection over a view's name: err = %v, want ErrExists", err)
	}
	if _, _, err := s.EnsureCollection("db", "v"); !errors.Is(err, ErrIsView) {
		t.Errorf("implicit collection over a view's name: err = %v, want ErrIsView", err)
	}
	if err := s.RenameCollection("db", "c", "db", "v", true); !errors.Is(err, ErrIsView) {
		t.Errorf("rename over a view: err = %v, want ErrIsView", err)
	}
	if s.Collection("db", "v") != nil || s.Collection("db", "c") == nil {
		t.Fatal("a refused change changed the catalog")
	}
	if _, err := s.CreateView(ViewDefinition{DB: "other", Name: "w", ViewOn: "nothing"}); err != nil {
		t.Fatal(err)
	}
	if got := s.Databases(); !slices.Equal(got, []string{"db", "other"}) {
		t.Errorf("Databases() = %v: a database with views only exists", got)
	}
	if _, err := s.ModifyView(ViewDefinition{DB: "db", Name: "nope", ViewOn: "c"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("modify a missing view: err = %v, want ErrNotFound", err)
	}
	if _, err := s.ModifyView(ViewDefinition{DB: "db", Name: "v", ViewOn: "d", Pipeline: match}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openDir(t, dir)
	defer s.Close()
	v := s.ViewDefinition("db", "v")
	if v == nil || v.ViewOn != "d" || !slices.Equal([]byte(v.Pipeline), []byte(match)) || v.Created.IsZero() {
		t.Fatalf("view after reopen: %+v", v)
	}
	if got := viewNames(s.ViewDefinitions("db")); !slices.Equal(got, []string{"v"}) {
		t.Errorf("ViewDefinitions(db) = %v", got)
	}
	if err := s.DropDatabase("other"); err != nil {
		t.Fatal(err)
	}
	if s.ViewDefinition("other", "w") != nil || slices.Contains(s.Databases(), "other") {
		t.Error("dropDatabase left its view")
	}
	if err := s.DropView("db", "v"); err != nil {
		t.Fatal(err)
	}
	if err := s.DropView("db", "v"); !errors.Is(err, ErrNotFound) {
		t.Errorf("drop a dropped view: err = %v, want ErrNotFound", err)
	}
	if _, _, err := s.EnsureCollection("db", "v"); err != nil {
		t.Errorf("the name of a dropped view is free: %v", err)
	}
}
