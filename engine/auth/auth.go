// Package auth holds Parsec's users and what they may do: SCRAM-SHA-1 and
// SCRAM-SHA-256 credentials as MongoDB derives and stores them, the server
// side of a SCRAM conversation, and MongoDB's built-in roles reduced to the
// classes of commands they allow. It is pure: the engine stores users and
// decides which class each command belongs to.
//
// Contract:
//   - NewCredentials derives, from a user name and a password, the stored
//     keys a client proves knowledge of; the password itself is never kept.
//     SCRAM-SHA-1 uses MongoDB's digest of "user:mongo:password" as the
//     SCRAM password, SCRAM-SHA-256 the SASLprep'd password, as drivers do.
//   - A Conversation runs one SCRAM exchange against a lookup of stored
//     credentials; it is valid only after the client proved the password
//     and received the server's signature. A user that does not exist
//     gets decoy credentials (Decoys): a salt stable for its name, the
//     real iteration count, keys nobody can match; so the exchange fails
//     at the proof, with the same error and the same work as a wrong
//     password. A user without keys for the mechanism fails at once.
//   - LoginBackoff slows the authentication attempts of a source address
//     that keeps failing; time is an input.
//   - Allowed reports whether roles grant a class of command on a database.
package auth

import (
	"bytes"
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/xdg-go/scram"
)

// The SCRAM mechanisms Parsec speaks, as MongoDB names them.
const (
	SHA1   = "SCRAM-SHA-1"
	SHA256 = "SCRAM-SHA-256"
)

// Mechanisms are the supported mechanisms, in the order hello lists them.
var Mechanisms = []string{SHA1, SHA256}

// MongoDB's default iteration counts (scramIterationCount and
// scramSHA256IterationCount).
const (
	sha1Iterations   = 10000
	sha256Iterations = 15000
)

// Credential is one mechanism's stored keys, with the field names and
// encodings of MongoDB's admin.system.users documents (base64 strings).
type Credential struct {
	IterationCount int    `bson:"iterationCount"`
	Salt           string `bson:"salt"`
	StoredKey      string `bson:"storedKey"`
	ServerKey      string `bson:"serverKey"`
}

// Credentials are a user's stored keys per mechanism (nil: none).
type Credentials struct {
	SHA1   *Credential `bson:"SCRAM-SHA-1,omitempty"`
	SHA256 *Credential `bson:"SCRAM-SHA-256,omitempty"`
}

// Mechanisms lists the mechanisms c has keys for.
func (c Credentials) Mechanisms() []string {
	var out []string
	if c.SHA1 != nil {
		out = append(out, SHA1)
	}
	if c.SHA256 != nil {
		out = append(out, SHA256)
	}
	return out
}

// ErrPassword is a password SCRAM-SHA-256 cannot use (SASLprep refuses it).
var ErrPassword = errors.New("password is not valid for SCRAM-SHA-256 (SASLprep)")

// NewCredentials derives the stored keys of user with password for each of
// mechs (both when empty), with a fresh random salt per mechanism.
func NewCredentials(user, password string, mechs []string) (Credentials, error) {
	if len(mechs) == 0 {
		mechs = Mechanisms
	}
	var c Credentials
	for _, m := range mechs {
		var err error
		switch m {
		case SHA1:
			c.SHA1, err = derive(scram.SHA1, user, mongoDigest(user, password), sha1Iterations, false, 16)
		case SHA256:
			c.SHA256, err = derive(scram.SHA256, user, password, sha256Iterations, true, 28)
		default:
			return Credentials{}, fmt.Errorf("unknown mechanism %q", m)
		}
		if err != nil {
			return Credentials{}, err
		}
	}
	return c, nil
}

// mongoDigest is the password SCRAM-SHA-1 uses in MongoDB:
// hex(md5("<user>:mongo:<password>")).
func mongoDigest(user, password string) string {
	sum := md5.Sum([]byte(user + ":mongo:" + password))
	return hex.EncodeToString(sum[:])
}

func derive(h scram.HashGeneratorFcn, user, password string, iters int, prep bool, saltLen int) (*Credential, error) {
	var cl *scram.Client
	var err error
	if prep {
		cl, err = h.NewClient(user, password, "")
	} else {
		cl, err = h.NewClientUnprepped(user, password, "")
	}
	if err != nil {
		return nil, ErrPassword
	}
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return nil, err
	}
	sc, err := cl.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt), Iters: iters})
	if err != nil {
		return nil, err
	}
	return &Credential{
		IterationCount: iters,
		Salt:           b64(salt),
		StoredKey:      b64(sc.StoredKey),
		ServerKey:      b64(sc.ServerKey),
	}, nil
}

// RoleRef names a role and the database it applies to.
type RoleRef struct {
	Role string `bson:"role"`
	DB   string `bson:"db"`
}

func (r RoleRef) String() string { return r.Role + "@" + r.DB }

// User is a stored user, as usersInfo shows it (credentials aside).
type User struct {
	ID          string      `bson:"_id"` // "<db>.<user>"
	UserID      []byte      `bson:"userId"`
	User        string      `bson:"user"`
	DB          string      `bson:"db"`
	Credentials Credentials `bson:"credentials"`
	Roles       []RoleRef   `bson:"roles"`
	CustomData  any         `bson:"customData,omitempty"`
}

// ErrUnknownMechanism is a SCRAM mechanism Parsec does not speak.
var ErrUnknownMechanism = errors.New("unknown mechanism")

// ErrAuthFailed is any failed authentication: unknown user, missing
// credentials or a wrong proof look the same to the client.
var ErrAuthFailed = errors.New("authentication failed")

// Conversation is the server side of one SCRAM exchange.
type Conversation struct {
	Mechanism string
	conv      *scram.ServerConversation
	// decoy: the client named a user without keys for the mechanism and
	// is answered with decoy credentials.
	decoy bool
}

// Lookup finds a user by the name the client sent; ok false when there is
// none.
type Lookup func(name string) (u User, ok bool, err error)

// Decoys derive the credentials a conversation shows for a user that does
// not exist: from a secret key and the user's name, so that the salt is
// the same at every attempt, as a real user's is.
type Decoys struct {
	key []byte
}

// NewDecoys makes decoy credentials keyed by key (at least 16 bytes of
// secret randomness; nil draws 32 random bytes).
func NewDecoys(key []byte) (*Decoys, error) {
	if key == nil {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
	}
	if len(key) < 16 {
		return nil, errors.New("decoy key shorter than 16 bytes")
	}
	return &Decoys{key: bytes.Clone(key)}, nil
}

// credentials are the decoy keys of user name for mechanism: the salt
// length and iteration count of real ones, a salt and keys derived from
// the decoy key. The keys are no hash of any password, so no proof
// matches them.
func (d *Decoys) credentials(mechanism, name string) scram.StoredCredentials {
	derive := func(label string, n int) []byte {
		m := hmac.New(sha256.New, d.key)
		m.Write([]byte(label + "\x00" + mechanism + "\x00" + name))
		return m.Sum(nil)[:n]
	}
	saltLen, iters, keyLen := 28, sha256Iterations, sha256.Size
	if mechanism == SHA1 {
		saltLen, iters, keyLen = 16, sha1Iterations, 20
	}
	return scram.StoredCredentials{
		KeyFactors: scram.KeyFactors{Salt: string(derive("salt", saltLen)), Iters: iters},
		StoredKey:  derive("stored", keyLen),
		ServerKey:  derive("server", keyLen),
	}
}

// NewConversation starts a SCRAM exchange of mechanism against lookup; a
// user lookup does not know gets decoys' credentials.
func NewConversation(mechanism string, lookup Lookup, decoys *Decoys) (*Conversation, error) {
	var h scram.HashGeneratorFcn
	switch mechanism {
	case SHA1:
		h = scram.SHA1
	case SHA256:
		h = scram.SHA256
	default:
		return nil, ErrUnknownMechanism
	}
	if decoys == nil {
		return nil, errors.New("auth: NewConversation without decoys")
	}
	conv := &Conversation{Mechanism: mechanism}
	srv, err := h.NewServer(func(name string) (scram.StoredCredentials, error) {
		u, ok, err := lookup(name)
		if err != nil {
			return scram.StoredCredentials{}, err
		}
		if !ok {
			conv.decoy = true
			return decoys.credentials(mechanism, name), nil
		}
		c := u.Credentials.SHA256
		if mechanism == SHA1 {
			c = u.Credentials.SHA1
		}
		if c == nil {
			// As MongoDB: the user exists (hello's saslSupportedMechs
			// says so) but not for this mechanism; failing now lets a
			// driver's speculative SCRAM-SHA-256 fall back to SHA-1.
			return scram.StoredCredentials{}, ErrAuthFailed
		}
		return c.stored()
	})
	if err != nil {
		return nil, err
	}
	conv.conv = srv.NewConversation()
	return conv, nil
}

// Decoy reports whether the client named a user that does not exist (for
// the server's log only).
func (c *Conversation) Decoy() bool { return c.decoy }

func (c *Credential) stored() (scram.StoredCredentials, error) {
	salt, err1 := unb64(c.Salt)
	stored, err2 := unb64(c.StoredKey)
	server, err3 := unb64(c.ServerKey)
	if err := errors.Join(err1, err2, err3); err != nil {
		return scram.StoredCredentials{}, fmt.Errorf("stored credentials: %w", err)
	}
	return scram.StoredCredentials{
		KeyFactors: scram.KeyFactors{Salt: string(salt), Iters: c.IterationCount},
		StoredKey:  stored,
		ServerKey:  server,
	}, nil
}

// Step takes the client's next message and returns the server's. Any error
// ends the exchange unauthenticated.
func (c *Conversation) Step(msg []byte) ([]byte, error) {
	out, err := c.conv.Step(string(msg))
	if err != nil {
		return nil, err
	}
	return []byte(out), nil
}

// Done reports whether the exchange is over; Valid whether it
// authenticated the client.
func (c *Conversation) Done() bool  { return c.conv.Done() }
func (c *Conversation) Valid() bool { return c.conv.Valid() }

// Username is the name the client gave (after its first message).
func (c *Conversation) Username() string { return c.conv.Username() }

// Class is what a command needs from the caller's roles.
type Class uint8

const (
	// ClassNone: anyone, even before authentication (hello, ping, saslStart).
	ClassNone Class = iota
	// ClassAuthenticated: any authenticated user (listCommands, logout).
	ClassAuthenticated
	// ClassFind reads documents (find, aggregate, count, distinct, getMore).
	ClassFind
	// ClassCatalog reads metadata (listCollections, listIndexes, collStats).
	ClassCatalog
	// ClassWrite writes documents (insert, update, delete, findAndModify).
	ClassWrite
	// ClassDDL creates and drops collections and indexes.
	ClassDDL
	// ClassDBAdmin changes a database (collMod, dropDatabase, validate).
	ClassDBAdmin
	// ClassBypassValidation writes documents past the collection's
	// validator (bypassDocumentValidation: true).
	ClassBypassValidation
	// ClassUserAdmin manages the database's users.
	ClassUserAdmin
	// ClassClusterMonitor reads server state (serverStatus, getLog, every
	// database in listDatabases).
	ClassClusterMonitor
	// ClassClusterAdmin changes the server (shardCollection, fail points,
	// killing every session).
	ClassClusterAdmin
)

var classNames = [...]string{"none", "authenticated", "find", "catalog", "write", "ddl", "dbAdmin", "bypassDocumentValidation", "userAdmin", "clusterMonitor", "clusterAdmin"}

func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("class(%d)", c)
}

// roleDef is a built-in role: the classes it grants on its database (or on
// every database when anyDB), and extra grants on named databases.
type roleDef struct {
	adminOnly bool // exists only in the admin database
	anyDB     bool
	grants    []Class
	on        map[string][]Class
}

var (
	readClasses  = []Class{ClassFind, ClassCatalog}
	configReads  = map[string][]Class{"config": readClasses, "local": readClasses}
	builtinRoles = map[string]roleDef{
		"read":                 {grants: readClasses},
		"readWrite":            {grants: []Class{ClassFind, ClassCatalog, ClassWrite, ClassDDL}},
		"dbAdmin":              {grants: []Class{ClassCatalog, ClassDDL, ClassDBAdmin, ClassBypassValidation}},
		"userAdmin":            {grants: []Class{ClassUserAdmin}},
		"dbOwner":              {grants: []Class{ClassFind, ClassCatalog, ClassWrite, ClassDDL, ClassDBAdmin, ClassBypassValidation, ClassUserAdmin}},
		"readAnyDatabase":      {adminOnly: true, anyDB: true, grants: readClasses},
		"readWriteAnyDatabase": {adminOnly: true, anyDB: true, grants: []Class{ClassFind, ClassCatalog, ClassWrite, ClassDDL}},
		"userAdminAnyDatabase": {adminOnly: true, anyDB: true, grants: []Class{ClassUserAdmin}},
		"dbAdminAnyDatabase":   {adminOnly: true, anyDB: true, grants: []Class{ClassCatalog, ClassDDL, ClassDBAdmin, ClassBypassValidation}},
		"clusterMonitor":       {adminOnly: true, grants: []Class{ClassClusterMonitor}, on: configReads},
		"clusterManager":       {adminOnly: true, grants: []Class{ClassClusterMonitor, ClassClusterAdmin}, on: configReads},
		"clusterAdmin":         {adminOnly: true, grants: []Class{ClassClusterMonitor, ClassClusterAdmin}, on: configReads},
		"hostManager":          {adminOnly: true, grants: []Class{ClassClusterMonitor, ClassClusterAdmin}},
		"backup":               {adminOnly: true, anyDB: true, grants: []Class{ClassFind, ClassCatalog, ClassClusterMonitor}},
		"restore":              {adminOnly: true, anyDB: true, grants: []Class{ClassCatalog, ClassWrite, ClassDDL, ClassBypassValidation, ClassUserAdmin}},
		"root":                 {adminOnly: true, anyDB: true, grants: allClasses()},
		"__system":             {adminOnly: true, anyDB: true, grants: allClasses()},
	}
)

func allClasses() []Class {
	var out []Class
	for c := ClassFind; c <= ClassClusterAdmin; c++ {
		out = append(out, c)
	}
	return out
}

// BuiltinRoles lists the built-in roles that exist in database db, sorted.
func BuiltinRoles(db string) []string {
	var out []string
	for name, r := range builtinRoles {
		if !r.adminOnly || db == "admin" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// IsBuiltinRole reports whether r names a built-in role of its database.
func IsBuiltinRole(r RoleRef) bool {
	def, ok := builtinRoles[r.Role]
	return ok && (!def.adminOnly || r.DB == "admin")
}

// Allowed reports whether roles grant class on database db. Cluster
// classes ignore db.
func Allowed(roles []RoleRef, class Class, db string) bool {
	if class <= ClassAuthenticated {
		return true
	}
	cluster := class >= ClassClusterMonitor
	for _, r := range roles {
		def, ok := builtinRoles[r.Role]
		if !ok || (def.adminOnly && r.DB != "admin") {
			continue
		}
		if slices.Contains(def.on[db], class) {
			return true
		}
		if !slices.Contains(def.grants, class) {
			continue
		}
		if cluster || def.anyDB || r.DB == db {
			return true
		}
	}
	return false
}

// SeesAllDatabases reports whether roles may list every database (others
// see only the databases their roles name).
func SeesAllDatabases(roles []RoleRef) bool {
	for _, r := range roles {
		def, ok := builtinRoles[r.Role]
		if ok && r.DB == "admin" && (def.anyDB || slices.Contains(def.grants, ClassClusterMonitor)) {
			return true
		}
	}
	return false
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func unb64(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }

// classActions are MongoDB's action names for each class, as privileges
// list them.
var classActions = map[Class][]string{
	ClassFind:             {"find", "killCursors"},
	ClassCatalog:          {"collStats", "dbStats", "listCollections", "listIndexes"},
	ClassWrite:            {"insert", "remove", "update"},
	ClassDDL:              {"createCollection", "createIndex", "dropCollection", "dropIndex", "renameCollectionSameDB"},
	ClassDBAdmin:          {"collMod", "dropDatabase", "enableProfiler", "validate"},
	ClassBypassValidation: {"bypassDocumentValidation"},
	ClassUserAdmin:        {"changeCustomData", "changePassword", "createUser", "dropUser", "grantRole", "revokeRole", "viewRole", "viewUser"},
	ClassClusterMonitor:   {"getCmdLineOpts", "getLog", "getParameter", "hostInfo", "listDatabases", "listShards", "replSetGetConfig", "replSetGetStatus", "serverStatus"},
	ClassClusterAdmin:     {"enableSharding", "fsync", "killAnySession", "killop"},
}

// Resource is what a privilege applies to: a database ("" with AnyDB:
// every database), or the cluster.
type Resource struct {
	DB      string
	AnyDB   bool
	Cluster bool
}

// Privilege is a set of actions on a resource.
type Privilege struct {
	Resource Resource
	Actions  []string
}

// Privileges lists what roles allow, one privilege per resource, in a
// stable order: the cluster first, then every database, then databases by
// name.
func Privileges(roles []RoleRef) []Privilege {
	acts := map[Resource]map[string]bool{}
	grant := func(r Resource, c Class) {
		if acts[r] == nil {
			acts[r] = map[string]bool{}
		}
		for _, a := range classActions[c] {
			acts[r][a] = true
		}
	}
	for _, r := range roles {
		def, ok := builtinRoles[r.Role]
		if !ok || (def.adminOnly && r.DB != "admin") {
			continue
		}
		for _, c := range def.grants {
			switch {
			case c >= ClassClusterMonitor:
				grant(Resource{Cluster: true}, c)
			case def.anyDB:
				grant(Resource{AnyDB: true}, c)
			default:
				grant(Resource{DB: r.DB}, c)
			}
		}
		for db, classes := range def.on {
			for _, c := range classes {
				grant(Resource{DB: db}, c)
			}
		}
	}
	out := make([]Privilege, 0, len(acts))
	for res, set := range acts {
		p := Privilege{Resource: res}
		for a := range set {
			p.Actions = append(p.Actions, a)
		}
		slices.Sort(p.Actions)
		out = append(out, p)
	}
	rank := func(r Resource) int {
		switch {
		case r.Cluster:
			return 0
		case r.AnyDB:
			return 1
		}
		return 2
	}
	slices.SortFunc(out, func(a, b Privilege) int {
		if d := rank(a.Resource) - rank(b.Resource); d != 0 {
			return d
		}
		return strings.Compare(a.Resource.DB, b.Resource.DB)
	})
	return out
}
