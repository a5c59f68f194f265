package unified

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// SupportedSchema is the newest schemaVersion this runner accepts (with
// major version 1).
const SupportedSchema = "1.21"

// File is one test file.
type File struct {
	Description       string           `bson:"description"`
	SchemaVersion     string           `bson:"schemaVersion"`
	RunOnRequirements []Requirement    `bson:"runOnRequirements"`
	CreateEntities    []bson.Raw       `bson:"createEntities"`
	InitialData       []CollectionData `bson:"initialData"`
	Tests             []Test           `bson:"tests"`
}

// Requirement is one runOnRequirement: a test runs when any of its
// requirements is met.
type Requirement struct {
	MinServerVersion string   `bson:"minServerVersion"`
	MaxServerVersion string   `bson:"maxServerVersion"`
	Topologies       []string `bson:"topologies"`
	Serverless       string   `bson:"serverless"`
	ServerParameters bson.Raw `bson:"serverParameters"`
	Auth             *bool    `bson:"auth"`
	AuthMechanism    string   `bson:"authMechanism"`
	CSFLE            *bool    `bson:"csfle"`
}

// CollectionData is a collection's contents, before (initialData) or after
// (outcome) a test.
type CollectionData struct {
	CollectionName string     `bson:"collectionName"`
	DatabaseName   string     `bson:"databaseName"`
	CreateOptions  bson.Raw   `bson:"createOptions"`
	Documents      []bson.Raw `bson:"documents"`
}

// Test is one test case.
type Test struct {
	Description       string           `bson:"description"`
	RunOnRequirements []Requirement    `bson:"runOnRequirements"`
	SkipReason        string           `bson:"skipReason"`
	Operations        []Operation      `bson:"operations"`
	ExpectEvents      []ExpectedEvents `bson:"expectEvents"`
	Outcome           []CollectionData `bson:"outcome"`
}

// Operation is one step of a test. ExpectResult has Type 0 when absent.
type Operation struct {
	Name                 string        `bson:"name"`
	Object               string        `bson:"object"`
	Arguments            bson.Raw      `bson:"arguments"`
	ExpectError          bson.Raw      `bson:"expectError"`
	ExpectResult         bson.RawValue `bson:"expectResult"`
	IgnoreResultAndError bool          `bson:"ignoreResultAndError"`
	SaveResultAsEntity   string        `bson:"saveResultAsEntity"`
}

// ExpectedEvents lists the events one client must have published.
type ExpectedEvents struct {
	Client            string     `bson:"client"`
	EventType         string     `bson:"eventType"`
	Events            []bson.Raw `bson:"events"`
	IgnoreExtraEvents bool       `bson:"ignoreExtraEvents"`
}

// LoadFile reads and parses a test file.
func LoadFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var raw bson.Raw
	if err := bson.UnmarshalExtJSON(data, false, &raw); err != nil {
		return nil, fmt.Errorf("%s: extended JSON: %w", path, err)
	}
	var f File
	if err := bson.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &f, nil
}

// CheckSchema reports whether this runner can interpret a file of the
// given schemaVersion.
func CheckSchema(v string) error {
	got, err := parseVersion(v)
	if err != nil {
		return fmt.Errorf("schemaVersion %q: %w", v, err)
	}
	max, _ := parseVersion(SupportedSchema)
	if got[0] != max[0] || compareVersions(got, max) > 0 {
		return fmt.Errorf("schemaVersion %s is not supported (runner supports 1.0 to %s)", v, SupportedSchema)
	}
	return nil
}

// version is major, minor, patch.
type version [3]int

func (v version) String() string { return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2]) }

// parseVersion reads "1", "1.2" or "1.2.3"; anything after a '-' is
// dropped, as the format requires.
func parseVersion(s string) (version, error) {
	var v version
	s, _, _ = strings.Cut(s, "-")
	parts := strings.Split(s, ".")
	if len(parts) == 0 || len(parts) > 3 {
		return v, fmt.Errorf("bad version %q", s)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return v, fmt.Errorf("bad version %q", s)
		}
		v[i] = n
	}
	return v, nil
}

func compareVersions(a, b version) int {
	for i := range a {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}
