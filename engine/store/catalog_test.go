package store

import (
	"errors"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestCreateAndEnsureCollection(t *testing.T) {
	s := openMem(t)
	opts, _ := bson.Marshal(bson.D{{Key: "capped", Value: false}})
	a, err := s.CreateCollection("db", "a", opts)
	if err != nil {
		t.Fatal(err)
	}
	if a.DB != "db" || a.Name != "a" || a.Namespace() != "db.a" || len(a.UUID) != 16 || a.ID == 0 {
		t.Errorf("created entry = %+v", a)
	}
	if a.UUID[6]>>4 != 4 || a.UUID[8]&0xc0 != 0x80 {
		t.Errorf("uuid %x is not an RFC 4122 version 4 uuid", a.UUID)
	}
	if got := s.Collection("db", "a"); got != a {
		t.Errorf("Collection(db, a) = %+v, want the created entry", got)
	}
	if string(s.Collection("db", "a").Options) != string(opts) {
		t.Errorf("options not kept")
	}
	if _, err := s.CreateCollection("db", "a", nil); !errors.Is(err, ErrExists) {
		t.Errorf("creating db.a twice: err = %v, want ErrExists", err)
	}
	// Ensure returns the existing entry...
	got, created, err := s.EnsureCollection("db", "a")
	if err != nil || created || got != a {
		t.Errorf("EnsureCollection(existing) = %v, %v, %v", got, created, err)
	}
	// ...or creates one with a fresh id.
	b, created, err := s.EnsureCollection("db", "b")
	if err != nil || !created || b == nil || b.ID <= a.ID {
		t.Fatalf("EnsureCollection(new) = %+v, %v, %v", b, created, err)
	}
	if s.Collection("db", "b") != b || s.Collection("other", "b") != nil {
		t.Errorf("lookup by namespace is wrong")
	}
	names := func(db string) []string {
		var out []string
		for _, c := range s.Collections(db) {
			out = append(out, c.Name)
		}
		return out
	}
	mustCreate(t, s, "db", "0first")
	if got := names("db"); !slices.Equal(got, []string{"0first", "a", "b"}) {
		t.Errorf("Collections(db) = %v, want sorted names", got)
	}
}

func TestEnsureCollectionConcurrent(t *testing.T) {
	s := openMem(t)
	const n = 8
	got := make(chan *Collection, n)
	createdCount := make(chan bool, n)
	for i := 0; i < n; i++ {
		go func() {
			c, created, err := s.EnsureCollection("db", "c")
			if err != nil {
				t.Error(err)
			}
			got <- c
			createdCount <- created
		}()
	}
	var first *Collection
	creators := 0
	for i := 0; i < n; i++ {
		c := <-got
		if first == nil {
			first = c
		}
		if c != first {
			t.Errorf("EnsureCollection returned different entries for one namespace")
		}
		if <-createdCount {
			creators++
		}
	}
	if creators != 1 {
		t.Errorf("%d callers were told they created the collection, want 1", creators)
	}
}

func TestDatabases(t *testing.T) {
	s := openMem(t)
	if _, err := s.CreateDatabase("explicit", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateDatabase("explicit", nil); !errors.Is(err, ErrExists) {
		t.Errorf("creating a database twice: err = %v, want ErrExists", err)
	}
	opts, _ := bson.Marshal(bson.D{{Key: "throughput", Value: 400}})
	d, err := s.SetDatabaseOptions("explicit", opts)
	if err != nil || string(s.Database("explicit").Options) != string(opts) || d.Created != s.Database("explicit").Created {
		t.Errorf("SetDatabaseOptions = %+v, %v", d, err)
	}
	mustCreate(t, s, "implicit", "c")
	if got := s.Databases(); !slices.Equal(got, []string{"explicit", "implicit"}) {
		t.Errorf("Databases() = %v", got)
	}
	if s.Database("implicit") != nil {
		t.Errorf("a database with collections only has no explicit entry")
	}
}

func TestDropCollection(t *testing.T) {
	s := openMem(t)
	c := mustCreate(t, s, "db", "c")
	keep := mustCreate(t, s, "db", "keep")
	for i := int32(0); i < 20; i++ {
		insert(t, s, c, i, 10)
		insert(t, s, keep, i, 10)
	}
	if err := s.DropCollection("db", "c"); err != nil {
		t.Fatal(err)
	}
	if s.Collection("db", "c") != nil {
		t.Errorf("dropped collection is still in the catalog")
	}
	checkPurged(t, s, c.ID)
	if got := mustCounts(t, s, c); got != (Counts{}) {
		t.Errorf("counts of a dropped collection = %+v, want zero", got)
	}
	checkExact(t, s, keep, 20)
	if err := s.DropCollection("db", "c"); !errors.Is(err, ErrNotFound) {
		t.Errorf("dropping twice: err = %v, want ErrNotFound", err)
	}
	// A stale handle cannot write into the dropped collection.
	err := s.Update(func(tx *Txn) error { return tx.Insert(c, idKey(c, 99), mkDoc(99, 1)) })
	if !isChanged(err) {
		t.Errorf("insert through a stale handle: err = %v, want ErrCollectionChanged", err)
	}
	// Nor into a new collection of the same name, which has a new id.
	c2 := mustCreate(t, s, "db", "c")
	if c2.ID == c.ID {
		t.Fatalf("re-created collection reuses id %d", c.ID)
	}
	err = s.Update(func(tx *Txn) error { return tx.Insert(c, idKey(c, 99), mkDoc(99, 1)) })
	if !isChanged(err) {
		t.Errorf("insert through a handle of the previous incarnation: err = %v, want ErrCollectionChanged", err)
	}
	checkExact(t, s, c2, 0)
}

func TestDropDatabase(t *testing.T) {
	s := openMem(t)
	if _, err := s.CreateDatabase("db", nil); err != nil {
		t.Fatal(err)
	}
	a, b := mustCreate(t, s, "db", "a"), mustCreate(t, s, "db", "b")
	other := mustCreate(t, s, "db2", "a")
	for i := int32(0); i < 5; i++ {
		insert(t, s, a, i, 1)
		insert(t, s, b, i, 1)
		insert(t, s, other, i, 1)
	}
	if err := s.DropDatabase("db"); err != nil {
		t.Fatal(err)
	}
	if len(s.Collections("db")) != 0 || s.Database("db") != nil {
		t.Errorf("database db survived its drop")
	}
	if got := s.Databases(); !slices.Equal(got, []string{"db2"}) {
		t.Errorf("Databases() = %v, want [db2]", got)
	}
	checkPurged(t, s, a.ID)
	checkPurged(t, s, b.ID)
	checkExact(t, s, other, 5)
	// Dropping a database that does not exist is not an error (MongoDB).
	if err := s.DropDatabase("nope"); err != nil {
		t.Errorf("DropDatabase(absent) = %v", err)
	}
}

func TestRenameCollection(t *testing.T) {
	for _, tc := range []struct{ name, toDB string }{{"within", "db"}, {"across", "db2"}} {
		t.Run(tc.name, func(t *testing.T) {
			s := openMem(t)
			src := mustCreate(t, s, "db", "src")
			for i := int32(0); i < 10; i++ {
				insert(t, s, src, i, 5)
			}
			before := mustCounts(t, s, src)
			if err := s.RenameCollection("db", "src", tc.toDB, "dst", false); err != nil {
				t.Fatal(err)
			}
			if s.Collection("db", "src") != nil {
				t.Errorf("source still in the catalog")
			}
			dst := s.Collection(tc.toDB, "dst")
			if dst == nil || dst.ID != src.ID || string(dst.UUID) != string(src.UUID) || dst.DB != tc.toDB || dst.Name != "dst" {
				t.Fatalf("renamed entry = %+v, want id %d kept", dst, src.ID)
			}
			if src.DB != "db" || src.Name != "src" {
				t.Errorf("the published source entry was mutated: %+v", src)
			}
			if got := mustCounts(t, s, dst); got != before {
				t.Errorf("counts after rename = %+v, before %+v", got, before)
			}
			checkExact(t, s, dst, 10)
			// Writes through the old handle fail; through the new one they land.
			if err := s.Update(func(tx *Txn) error { return tx.Insert(src, idKey(src, 50), mkDoc(50, 1)) }); !isChanged(err) {
				t.Errorf("insert through the pre-rename handle: err = %v, want ErrCollectionChanged", err)
			}
			insert(t, s, dst, 50, 1)
			checkExact(t, s, dst, 11)
			if err := s.RenameCollection("db", "src", "db", "x", false); !errors.Is(err, ErrNotFound) {
				t.Errorf("renaming an absent collection: err = %v, want ErrNotFound", err)
			}
		})
	}
}

func TestRenameOntoExistingTarget(t *testing.T) {
	for _, toDB := range []string{"db", "db2"} {
		t.Run(toDB, func(t *testing.T) {
			s := openMem(t)
			src := mustCreate(t, s, "db", "src")
			dst := mustCreate(t, s, toDB, "dst")
			for i := int32(0); i < 4; i++ {
				insert(t, s, src, i, 1)
			}
			for i := int32(0); i < 7; i++ {
				insert(t, s, dst, i, 100)
			}
			if err := s.RenameCollection("db", "src", toDB, "dst", false); !errors.Is(err, ErrExists) {
				t.Fatalf("rename onto an existing target without dropTarget: err = %v, want ErrExists", err)
			}
			if s.Collection("db", "src") != src || s.Collection(toDB, "dst") != dst {
				t.Fatalf("a refused rename changed the catalog")
			}
			checkExact(t, s, src, 4)
			checkExact(t, s, dst, 7)

			if err := s.RenameCollection("db", "src", toDB, "dst", true); err != nil {
				t.Fatal(err)
			}
			moved := s.Collection(toDB, "dst")
			if moved == nil || moved.ID != src.ID || s.Collection("db", "src") != nil {
				t.Fatalf("after rename with dropTarget: %+v", moved)
			}
			checkExact(t, s, moved, 4)
			checkPurged(t, s, dst.ID)
			if err := s.Update(func(tx *Txn) error { return tx.Insert(dst, idKey(dst, 70), mkDoc(70, 1)) }); !isChanged(err) {
				t.Errorf("insert into the dropped target: err = %v, want ErrCollectionChanged", err)
			}
		})
	}
}

// TestRenameOntoItself guards against purging a live collection: with
// dropTarget the "target" is the source itself.
func TestRenameOntoItself(t *testing.T) {
	s := openMem(t)
	c := mustCreate(t, s, "db", "c")
	for i := int32(0); i < 3; i++ {
		insert(t, s, c, i, 1)
	}
	for _, dropTarget := range []bool{false, true} {
		if err := s.RenameCollection("db", "c", "db", "c", dropTarget); err == nil {
			t.Errorf("renaming a collection onto itself (dropTarget %v) succeeded", dropTarget)
		}
	}
	if s.Collection("db", "c") != c {
		t.Fatalf("catalog changed")
	}
	checkExact(t, s, c, 3)
}

func TestCollectionIDsNeverReused(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir)
	seen := map[uint32]bool{}
	note := func(c *Collection) {
		t.Helper()
		if seen[c.ID] {
			t.Fatalf("collection id %d handed out twice", c.ID)
		}
		seen[c.ID] = true
	}
	for i := 0; i < 3; i++ {
		note(mustCreate(t, s, "db", "c"))
		if err := s.DropCollection("db", "c"); err != nil {
			t.Fatal(err)
		}
	}
	last := mustCreate(t, s, "db", "last")
	note(last)
	if err := s.DropCollection("db", "last"); err != nil { // the highest id is gone too
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openDir(t, dir)
	defer s.Close()
	c := mustCreate(t, s, "db", "c")
	note(c)
	if c.ID <= last.ID {
		t.Errorf("after reopen, new id %d is not above the last one handed out (%d)", c.ID, last.ID)
	}
}

func TestCatalogPersists(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir)
	if _, err := s.CreateDatabase("explicit", nil); err != nil {
		t.Fatal(err)
	}
	a := mustCreate(t, s, "db", "a")
	b := mustCreate(t, s, "db", "b")
	if err := s.RenameCollection("db", "b", "db2", "b2", false); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openDir(t, dir)
	defer s.Close()
	a2, b2 := s.Collection("db", "a"), s.Collection("db2", "b2")
	if a2 == nil || a2.ID != a.ID || string(a2.UUID) != string(a.UUID) || !a2.Created.Equal(a.Created.Truncate(time.Millisecond)) {
		t.Errorf("db.a after reopen = %+v, want %+v", a2, a)
	}
	if b2 == nil || b2.ID != b.ID || s.Collection("db", "b") != nil {
		t.Errorf("renamed collection after reopen = %+v", b2)
	}
	if got := s.Databases(); !slices.Equal(got, []string{"db", "db2", "explicit"}) {
		t.Errorf("Databases() after reopen = %v", got)
	}
}
