package unified

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// ServerInfo is what runOnRequirements are checked against.
type ServerInfo struct {
	Version  version
	Topology string // "single", "replicaset", "sharded" or "load-balanced"
	Auth     bool   // authentication enabled

	admin  *mongo.Database
	mu     sync.Mutex
	params map[string]bson.RawValue // getParameter results; Type 0 when unknown
}

// discoverServer reads the version from buildInfo's versionArray and the
// topology from hello.
func discoverServer(ctx context.Context, internal *mongo.Client) (*ServerInfo, error) {
	admin := internal.Database("admin")
	info := &ServerInfo{admin: admin, params: map[string]bson.RawValue{}}
	var bi struct {
		VersionArray []int32 `bson:"versionArray"`
		Version      string  `bson:"version"`
	}
	if err := admin.RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&bi); err != nil {
		return nil, fmt.Errorf("buildInfo: %w", err)
	}
	if len(bi.VersionArray) >= 3 {
		info.Version = version{int(bi.VersionArray[0]), int(bi.VersionArray[1]), int(bi.VersionArray[2])}
	} else {
		v, err := parseVersion(bi.Version)
		if err != nil {
			return nil, fmt.Errorf("buildInfo version: %w", err)
		}
		info.Version = v
	}
	var hello struct {
		Msg     string `bson:"msg"`
		SetName string `bson:"setName"`
	}
	if err := admin.RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello); err != nil {
		return nil, fmt.Errorf("hello: %w", err)
	}
	switch {
	case hello.Msg == "isdbgrid":
		info.Topology = "sharded"
	case hello.SetName != "":
		info.Topology = "replicaset"
	default:
		info.Topology = "single"
	}
	return info, nil
}

// parameter returns a server parameter through getParameter (cached); Type
// 0 when the server does not know it.
func (s *ServerInfo) parameter(ctx context.Context, name string) bson.RawValue {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.params[name]; ok {
		return v
	}
	var v bson.RawValue
	raw, err := s.admin.RunCommand(ctx, bson.D{{Key: "getParameter", Value: 1}, {Key: name, Value: 1}}).Raw()
	if err == nil {
		v = raw.Lookup(name)
	}
	s.params[name] = v
	return v
}

// met reports whether any of reqs holds (no requirements always hold),
// with the reason when none does.
func (s *ServerInfo) met(ctx context.Context, reqs []Requirement) (bool, string) {
	if len(reqs) == 0 {
		return true, ""
	}
	var reasons []string
	for _, r := range reqs {
		ok, why := s.meets(ctx, r)
		if ok {
			return true, ""
		}
		reasons = append(reasons, why)
	}
	return false, strings.Join(reasons, "; or ")
}

func (s *ServerInfo) meets(ctx context.Context, r Requirement) (bool, string) {
	if r.MinServerVersion != "" {
		min, err := parseVersion(r.MinServerVersion)
		if err != nil || compareVersions(s.Version, min) < 0 {
			return false, fmt.Sprintf("needs server >= %s (server is %s)", r.MinServerVersion, s.Version)
		}
	}
	if r.MaxServerVersion != "" {
		max, err := parseVersion(r.MaxServerVersion)
		if err != nil || compareVersions(s.Version, max) > 0 {
			return false, fmt.Sprintf("needs server <= %s (server is %s)", r.MaxServerVersion, s.Version)
		}
	}
	if len(r.Topologies) > 0 {
		found := false
		for _, t := range r.Topologies {
			// MongoDB 3.6+ shards are replica sets, so a sharded cluster
			// of this version is also "sharded-replicaset".
			if t == s.Topology || (t == "sharded-replicaset" && s.Topology == "sharded") {
				found = true
			}
		}
		if !found {
			return false, fmt.Sprintf("needs topology %s (server is %s)", strings.Join(r.Topologies, "/"), s.Topology)
		}
	}
	if r.Serverless == "require" {
		return false, "needs Atlas Serverless"
	}
	if r.Auth != nil && *r.Auth != s.Auth {
		return false, fmt.Sprintf("needs auth=%v", *r.Auth)
	}
	if r.AuthMechanism != "" {
		return false, "needs auth mechanism " + r.AuthMechanism
	}
	if r.CSFLE != nil && *r.CSFLE {
		return false, "needs client-side field level encryption (not built into this runner)"
	}
	if len(r.ServerParameters) > 0 {
		elems, err := r.ServerParameters.Elements()
		if err != nil {
			return false, err.Error()
		}
		for _, e := range elems {
			got := s.parameter(ctx, e.Key())
			if got.Type == 0 || Equal(e.Value(), got) != nil {
				return false, fmt.Sprintf("needs server parameter %s=%s (server has %s)", e.Key(), Show(e.Value()), Show(got))
			}
		}
	}
	return true, ""
}
