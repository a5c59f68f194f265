package auth

import (
	"errors"
	"slices"
	"testing"

	"github.com/xdg-go/scram"
)

// converse runs a whole SCRAM exchange between a client that knows
// password and a server holding u, and reports whether the server accepted
// the client and the client the server.
func converse(t *testing.T, mech string, u User, name, password string) (serverOK, clientOK bool) {
	t.Helper()
	var cl *scram.Client
	var err error
	switch mech {
	case SHA1:
		cl, err = scram.SHA1.NewClientUnprepped(name, mongoDigest(name, password), "")
	case SHA256:
		cl, err = scram.SHA256.NewClient(name, password, "")
	}
	if err != nil {
		t.Fatal(err)
	}
	conv, err := NewConversation(mech, only(u))
	if err != nil {
		t.Fatal(err)
	}
	cc := cl.NewConversation()
	msg, err := cc.Step("")
	if err != nil {
		t.Fatal(err)
	}
	for !conv.Done() {
		out, err := conv.Step([]byte(msg))
		if err != nil {
			return false, false
		}
		msg, err = cc.Step(string(out))
		if err != nil {
			return conv.Valid(), false
		}
	}
	return conv.Valid(), cc.Valid()
}

// only is a lookup that knows u alone.
func only(u User) Lookup {
	return func(n string) (User, bool, error) {
		if n != u.User {
			return User{}, false, nil
		}
		return u, true, nil
	}
}

func TestConversations(t *testing.T) {
	creds, err := NewCredentials("alice", "pencil", nil)
	if err != nil {
		t.Fatal(err)
	}
	if creds.SHA1 == nil || creds.SHA256 == nil {
		t.Fatalf("both mechanisms expected: %+v", creds)
	}
	if creds.SHA1.IterationCount != 10000 || creds.SHA256.IterationCount != 15000 {
		t.Fatalf("iteration counts %d, %d", creds.SHA1.IterationCount, creds.SHA256.IterationCount)
	}
	u := User{User: "alice", DB: "test", Credentials: creds}
	for _, mech := range Mechanisms {
		if s, c := converse(t, mech, u, "alice", "pencil"); !s || !c {
			t.Errorf("%s with the right password: server %v, client %v", mech, s, c)
		}
		if s, _ := converse(t, mech, u, "alice", "pen"); s {
			t.Errorf("%s accepted a wrong password", mech)
		}
		if s, _ := converse(t, mech, u, "bob", "pencil"); s {
			t.Errorf("%s accepted an unknown user", mech)
		}
	}
	only1, err := NewCredentials("carol", "x", []string{SHA1})
	if err != nil {
		t.Fatal(err)
	}
	if only1.SHA256 != nil || len(only1.Mechanisms()) != 1 {
		t.Fatalf("SCRAM-SHA-1 only: %+v", only1)
	}
	if s, _ := converse(t, SHA256, User{User: "carol", Credentials: only1}, "carol", "x"); s {
		t.Error("SCRAM-SHA-256 accepted a user without SCRAM-SHA-256 credentials")
	}
	// Salts are random: the same password gives other keys.
	again, _ := NewCredentials("alice", "pencil", nil)
	if again.SHA256.StoredKey == creds.SHA256.StoredKey {
		t.Error("two users with one password share stored keys")
	}
	if _, err := NewConversation("PLAIN", nil); !errors.Is(err, ErrUnknownMechanism) {
		t.Errorf("PLAIN: %v", err)
	}
	if _, err := NewCredentials("x", "\u0007bell", []string{SHA256}); !errors.Is(err, ErrPassword) {
		t.Errorf("a password SASLprep refuses: %v", err)
	}
}

func TestAllowed(t *testing.T) {
	r := func(role, db string) RoleRef { return RoleRef{Role: role, DB: db} }
	cases := []struct {
		roles []RoleRef
		class Class
		db    string
		want  bool
	}{
		{nil, ClassNone, "x", true},
		{nil, ClassAuthenticated, "x", true},
		{nil, ClassFind, "x", false},
		{[]RoleRef{r("read", "app")}, ClassFind, "app", true},
		{[]RoleRef{r("read", "app")}, ClassFind, "other", false},
		{[]RoleRef{r("read", "app")}, ClassWrite, "app", false},
		{[]RoleRef{r("readWrite", "app")}, ClassWrite, "app", true},
		{[]RoleRef{r("readWrite", "app")}, ClassDDL, "app", true},
		{[]RoleRef{r("readWrite", "app")}, ClassDBAdmin, "app", false},
		{[]RoleRef{r("dbAdmin", "app")}, ClassFind, "app", false},
		{[]RoleRef{r("dbAdmin", "app")}, ClassDBAdmin, "app", true},
		{[]RoleRef{r("dbOwner", "app")}, ClassUserAdmin, "app", true},
		{[]RoleRef{r("userAdmin", "app")}, ClassFind, "app", false},
		{[]RoleRef{r("readAnyDatabase", "admin")}, ClassFind, "app", true},
		{[]RoleRef{r("readAnyDatabase", "app")}, ClassFind, "app", false}, // exists in admin only
		{[]RoleRef{r("readWriteAnyDatabase", "admin")}, ClassWrite, "x", true},
		{[]RoleRef{r("readWriteAnyDatabase", "admin")}, ClassClusterMonitor, "admin", false},
		{[]RoleRef{r("clusterMonitor", "admin")}, ClassClusterMonitor, "app", true},
		{[]RoleRef{r("clusterMonitor", "admin")}, ClassFind, "config", true},
		{[]RoleRef{r("clusterMonitor", "admin")}, ClassFind, "app", false},
		{[]RoleRef{r("clusterAdmin", "admin")}, ClassClusterAdmin, "admin", true},
		{[]RoleRef{r("root", "admin")}, ClassClusterAdmin, "admin", true},
		{[]RoleRef{r("root", "admin")}, ClassUserAdmin, "any", true},
		{[]RoleRef{r("root", "app")}, ClassFind, "app", false},
		{[]RoleRef{r("nosuch", "app")}, ClassFind, "app", false},
		{[]RoleRef{r("read", "a"), r("readWrite", "b")}, ClassWrite, "b", true},
	}
	for _, c := range cases {
		if got := Allowed(c.roles, c.class, c.db); got != c.want {
			t.Errorf("Allowed(%v, %s, %q) = %v, want %v", c.roles, c.class, c.db, got, c.want)
		}
	}
	if SeesAllDatabases([]RoleRef{r("readWrite", "app")}) || !SeesAllDatabases([]RoleRef{r("readAnyDatabase", "admin")}) || !SeesAllDatabases([]RoleRef{r("clusterMonitor", "admin")}) {
		t.Error("SeesAllDatabases")
	}
	if !IsBuiltinRole(r("read", "x")) || IsBuiltinRole(r("root", "x")) || !IsBuiltinRole(r("root", "admin")) {
		t.Error("IsBuiltinRole")
	}
	if n, m := len(BuiltinRoles("x")), len(BuiltinRoles("admin")); n != 5 || m <= n {
		t.Errorf("BuiltinRoles: %d in a database, %d in admin", n, m)
	}
}

func TestPrivileges(t *testing.T) {
	ps := Privileges([]RoleRef{{Role: "readWrite", DB: "shop"}, {Role: "read", DB: "shop"}, {Role: "clusterMonitor", DB: "admin"}})
	if len(ps) != 4 {
		t.Fatalf("privileges: %+v", ps)
	}
	if !ps[0].Resource.Cluster || !slices.Contains(ps[0].Actions, "serverStatus") {
		t.Errorf("first privilege is not the cluster's: %+v", ps[0])
	}
	var shop *Privilege
	for i := range ps {
		if ps[i].Resource.DB == "shop" {
			shop = &ps[i]
		}
	}
	if shop == nil || !slices.Contains(shop.Actions, "insert") || !slices.Contains(shop.Actions, "find") || slices.Contains(shop.Actions, "dropDatabase") {
		t.Errorf("shop privilege: %+v", shop)
	}
	if !slices.IsSorted(shop.Actions) {
		t.Errorf("actions not sorted: %v", shop.Actions)
	}
	root := Privileges([]RoleRef{{Role: "root", DB: "admin"}})
	if len(root) != 2 || !root[0].Resource.Cluster || !root[1].Resource.AnyDB {
		t.Errorf("root: %+v", root)
	}
	if len(Privileges([]RoleRef{{Role: "root", DB: "shop"}})) != 0 {
		t.Error("root outside admin grants privileges")
	}
}
