package auth

import (
	"errors"
	"slices"
	"strconv"
	"strings"
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
	conv, err := NewConversation(mech, only(u), testDecoys)
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

// testDecoys are the decoy credentials of the tests.
var testDecoys = func() *Decoys {
	d, err := NewDecoys([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		panic(err)
	}
	return d
}()

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
	if _, err := NewConversation("PLAIN", nil, testDecoys); !errors.Is(err, ErrUnknownMechanism) {
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
		{[]RoleRef{r("readWrite", "app")}, ClassBypassValidation, "app", false},
		{[]RoleRef{r("dbAdmin", "app")}, ClassBypassValidation, "app", true},
		{[]RoleRef{r("dbAdmin", "app")}, ClassBypassValidation, "other", false},
		{[]RoleRef{r("restore", "admin")}, ClassBypassValidation, "app", true},
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

// firstReply runs a SCRAM exchange's first step for name with a wrong
// password, and returns the server's first message and the error of the
// step that takes the client's proof.
func firstReply(t *testing.T, mech string, lookup Lookup, name string) (string, error) {
	t.Helper()
	h := scram.SHA256
	if mech == SHA1 {
		h = scram.SHA1
	}
	cl, err := h.NewClientUnprepped(name, "wrong", "")
	if err != nil {
		t.Fatal(err)
	}
	conv, err := NewConversation(mech, lookup, testDecoys)
	if err != nil {
		t.Fatal(err)
	}
	cc := cl.NewConversation()
	m1, _ := cc.Step("")
	out, err := conv.Step([]byte(m1))
	if err != nil {
		t.Fatalf("%s: the first step for %q failed: %v", mech, name, err)
	}
	m2, err := cc.Step(string(out))
	if err != nil {
		t.Fatalf("%s: the client refused the server's first message %q: %v", mech, out, err)
	}
	_, err = conv.Step([]byte(m2))
	if err == nil || conv.Valid() {
		t.Fatalf("%s: %q authenticated with a wrong password", mech, name)
	}
	return string(out), err
}

// saltAndIterations reads s= and i= of a server-first message.
func saltAndIterations(msg string) (salt, iters string) {
	for _, f := range strings.Split(msg, ",") {
		switch {
		case strings.HasPrefix(f, "s="):
			salt = f[2:]
		case strings.HasPrefix(f, "i="):
			iters = f[2:]
		}
	}
	return salt, iters
}

// TestDecoyCredentials: a user that does not exist is answered like a
// real one: a salt of the real length that
// is the same at every attempt and differs between names, the default
// iteration count, and a failure at the proof with the error of a wrong
// password; the conversation says it used a decoy.
func TestDecoyCredentials(t *testing.T) {
	creds, err := NewCredentials("alice", "pencil", nil)
	if err != nil {
		t.Fatal(err)
	}
	sha1Only, err := NewCredentials("carol", "pencil", []string{SHA1})
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(n string) (User, bool, error) {
		switch n {
		case "alice":
			return User{User: n, Credentials: creds}, true, nil
		case "carol":
			return User{User: n, Credentials: sha1Only}, true, nil
		}
		return User{}, false, nil
	}
	for _, mech := range Mechanisms {
		real := creds.SHA256
		if mech == SHA1 {
			real = creds.SHA1
		}
		realMsg, realErr := firstReply(t, mech, lookup, "alice")
		realSalt, realIters := saltAndIterations(realMsg)
		if realSalt != real.Salt || realIters != strconv.Itoa(real.IterationCount) {
			t.Fatalf("%s: real first message %q", mech, realMsg)
		}
		ghost1, err1 := firstReply(t, mech, lookup, "ghost")
		ghost2, err2 := firstReply(t, mech, lookup, "ghost")
		other, _ := firstReply(t, mech, lookup, "ghost2")
		s1, i1 := saltAndIterations(ghost1)
		s2, _ := saltAndIterations(ghost2)
		so, _ := saltAndIterations(other)
		if s1 == "" || s1 != s2 {
			t.Errorf("%s: decoy salts %q and %q for one name", mech, s1, s2)
		}
		if so == s1 {
			t.Errorf("%s: two names share the decoy salt %q", mech, s1)
		}
		if raw1, _ := unb64(s1); len(raw1) != len(mustUnb64(t, real.Salt)) {
			t.Errorf("%s: decoy salt of %d bytes, real ones have %d", mech, len(raw1), len(mustUnb64(t, real.Salt)))
		}
		if i1 != realIters {
			t.Errorf("%s: decoy iterations %s, real %s", mech, i1, realIters)
		}
		if err1.Error() != realErr.Error() || err2.Error() != realErr.Error() {
			t.Errorf("%s: unknown user fails with %q, wrong password with %q", mech, err1, realErr)
		}
		conv, _ := NewConversation(mech, lookup, testDecoys)
		_, _ = conv.Step([]byte("n,,n=ghost,r=abc"))
		if !conv.Decoy() {
			t.Errorf("%s: the conversation for an unknown user is no decoy", mech)
		}
	}
	// A user without SCRAM-SHA-256 keys fails at the first step, as in
	// MongoDB (drivers then fall back to SCRAM-SHA-1).
	conv, _ := NewConversation(SHA256, lookup, testDecoys)
	if out, err := conv.Step([]byte("n,,n=carol,r=abc")); err == nil || conv.Decoy() {
		t.Errorf("SCRAM-SHA-256 for a SCRAM-SHA-1 user: %q, %v, decoy %v", out, err, conv.Decoy())
	}
	if _, err := NewDecoys([]byte("short")); err == nil {
		t.Error("a 5-byte decoy key was accepted")
	}
	// Another key gives other salts.
	d2, _ := NewDecoys(nil)
	if d2.credentials(SHA256, "ghost").Salt == testDecoys.credentials(SHA256, "ghost").Salt {
		t.Error("two decoy keys give one salt")
	}
}

func mustUnb64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := unb64(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
