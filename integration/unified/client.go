package unified

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// observedEvent is one recorded command or connection-pool event, named
// as the format names it (commandStartedEvent, connectionCheckedOutEvent…).
type observedEvent struct {
	kind               string
	commandName        string
	databaseName       string
	command            bson.Raw // started
	reply              bson.Raw // succeeded
	serverConnectionID *int64
	serviceID          *bson.ObjectID
	reason             string // connectionClosed, connectionCheckOutFailed
	interruption       bool   // poolCleared
}

// sensitiveCommands are never observed (command monitoring spec,
// "Security"); hello and legacy hello only when the driver redacted them.
var sensitiveCommands = map[string]bool{
	"authenticate": true, "saslstart": true, "saslcontinue": true, "getnonce": true,
	"createuser": true, "updateuser": true, "copydbgetnonce": true, "copydbsaslstart": true, "copydb": true,
}

// clientEntity is a driver client with its observed events.
type clientEntity struct {
	id     string
	client *mongo.Client

	observe          map[string]bool
	ignore           map[string]bool
	observeSensitive bool

	mu         sync.Mutex
	listening  bool
	ignoredReq map[int64]bool // request IDs of ignored started events
	// reqLsid maps a started command's request ID to its session id;
	// dirtyLsids are the sessions a command of which met a network error
	// (the driver then marks the session dirty and discards it).
	reqLsid    map[int64]string
	dirtyLsids map[string]bool
	commands   []observedEvent
	cmap       []observedEvent
	checkedOut int
}

// Client entity creation.

type clientSpec struct {
	ID                            string   `bson:"id"`
	URIOptions                    bson.Raw `bson:"uriOptions"`
	UseMultipleMongoses           *bool    `bson:"useMultipleMongoses"`
	ObserveEvents                 []string `bson:"observeEvents"`
	IgnoreCommandMonitoringEvents []string `bson:"ignoreCommandMonitoringEvents"`
	ObserveSensitiveCommands      bool     `bson:"observeSensitiveCommands"`
	StoreEventsAsEntities         bson.Raw `bson:"storeEventsAsEntities"`
	ServerAPI                     bson.Raw `bson:"serverApi"`
	ObserveLogMessages            bson.Raw `bson:"observeLogMessages"`
	AutoEncryptOpts               bson.Raw `bson:"autoEncryptOpts"`
}

// newClient makes a client entity. hosts are "host:port" seeds of the
// server; with useMultipleMongoses the client is given two names of it
// (127.0.0.1 and localhost), which the driver sees as two mongos routers.
func newClient(host string, cred *options.Credential, raw bson.Raw) (*clientEntity, error) {
	var spec clientSpec
	if err := bson.Unmarshal(raw, &spec); err != nil {
		return nil, fmt.Errorf("runner: client entity: %w", err)
	}
	switch {
	case spec.StoreEventsAsEntities != nil:
		return nil, fmt.Errorf("runner: client option storeEventsAsEntities not implemented")
	case spec.ObserveLogMessages != nil:
		return nil, fmt.Errorf("runner: client option observeLogMessages not implemented")
	case spec.AutoEncryptOpts != nil:
		return nil, fmt.Errorf("runner: client option autoEncryptOpts not implemented")
	}
	c := &clientEntity{
		id:               spec.ID,
		observe:          map[string]bool{},
		ignore:           map[string]bool{"configureFailPoint": true},
		observeSensitive: spec.ObserveSensitiveCommands,
		listening:        true,
		ignoredReq:       map[int64]bool{},
		reqLsid:          map[int64]string{},
		dirtyLsids:       map[string]bool{},
	}
	for _, e := range spec.ObserveEvents {
		c.observe[e] = true
	}
	for _, n := range spec.IgnoreCommandMonitoringEvents {
		c.ignore[n] = true
	}

	hosts := host
	if spec.UseMultipleMongoses != nil && *spec.UseMultipleMongoses {
		_, port, _ := strings.Cut(host, ":")
		hosts = host + ",localhost:" + port
	}
	query := url.Values{}
	query.Set("serverSelectionTimeoutMS", "10000")
	if len(spec.URIOptions) > 0 {
		elems, err := spec.URIOptions.Elements()
		if err != nil {
			return nil, err
		}
		for _, e := range elems {
			v := e.Value()
			switch v.Type {
			case bson.TypeString:
				query.Set(e.Key(), v.StringValue())
			case bson.TypeBoolean:
				query.Set(e.Key(), strconv.FormatBool(v.Boolean()))
			case bson.TypeInt32, bson.TypeInt64, bson.TypeDouble:
				query.Set(e.Key(), strconv.FormatInt(v.AsInt64(), 10))
			case bson.TypeArray:
				vals, _ := v.Array().Values()
				for _, x := range vals {
					query.Add(e.Key(), x.StringValue())
				}
			default:
				return nil, fmt.Errorf("runner: uriOption %s of type %s not supported", e.Key(), TypeName(v.Type))
			}
		}
	}
	opts := options.Client().ApplyURI("mongodb://" + hosts + "/?" + query.Encode())
	if cred != nil {
		opts.SetAuth(*cred)
	}
	opts.SetMonitor(&event.CommandMonitor{
		Started:   c.started,
		Succeeded: c.succeeded,
		Failed:    c.failed,
	})
	opts.SetPoolMonitor(&event.PoolMonitor{Event: c.poolEvent})
	if spec.ServerAPI != nil {
		a := newArgs("serverApi", spec.ServerAPI)
		v, _, err := a.str("version")
		if err != nil {
			return nil, err
		}
		api := options.ServerAPI(options.ServerAPIVersion(v))
		if b, ok, err := a.boolean("strict"); err != nil {
			return nil, err
		} else if ok {
			api.SetStrict(b)
		}
		if b, ok, err := a.boolean("deprecationErrors"); err != nil {
			return nil, err
		} else if ok {
			api.SetDeprecationErrors(b)
		}
		if err := a.finish(); err != nil {
			return nil, err
		}
		opts.SetServerAPIOptions(api)
	}
	client, err := mongo.Connect(opts)
	if err != nil {
		return nil, fmt.Errorf("runner: connect client %s: %w", spec.ID, err)
	}
	c.client = client
	return c, nil
}

// stopListening ends event collection (after the test's operations).
func (c *clientEntity) stopListening() {
	c.mu.Lock()
	c.listening = false
	c.mu.Unlock()
}

func (c *clientEntity) ignored(name string) bool {
	if c.ignore[name] {
		return true
	}
	return !c.observeSensitive && sensitiveCommands[strings.ToLower(name)]
}

func (c *clientEntity) started(_ context.Context, e *event.CommandStartedEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id, ok := lsidKey(e.Command.Lookup("lsid")); ok {
		c.reqLsid[e.RequestID] = id
	}
	redactedHello := (e.CommandName == "hello" || strings.EqualFold(e.CommandName, "isMaster")) && len(e.Command) <= 5
	if c.ignored(e.CommandName) || (redactedHello && !c.observeSensitive) {
		c.ignoredReq[e.RequestID] = true
		return
	}
	if !c.listening || !c.observe["commandStartedEvent"] {
		return
	}
	c.commands = append(c.commands, observedEvent{
		kind: "commandStartedEvent", commandName: e.CommandName, databaseName: e.DatabaseName,
		command: append(bson.Raw(nil), e.Command...), serverConnectionID: e.ServerConnectionID, serviceID: e.ServiceID,
	})
}

func (c *clientEntity) succeeded(_ context.Context, e *event.CommandSucceededEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.reqLsid, e.RequestID)
	if c.ignoredReq[e.RequestID] || c.ignored(e.CommandName) {
		delete(c.ignoredReq, e.RequestID)
		return
	}
	if !c.listening || !c.observe["commandSucceededEvent"] {
		return
	}
	c.commands = append(c.commands, observedEvent{
		kind: "commandSucceededEvent", commandName: e.CommandName, databaseName: e.DatabaseName,
		reply: append(bson.Raw(nil), e.Reply...), serverConnectionID: e.ServerConnectionID, serviceID: e.ServiceID,
	})
}

func (c *clientEntity) failed(_ context.Context, e *event.CommandFailedEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id, ok := c.reqLsid[e.RequestID]; ok && mongo.IsNetworkError(e.Failure) {
		c.dirtyLsids[id] = true
	}
	delete(c.reqLsid, e.RequestID)
	if c.ignoredReq[e.RequestID] || c.ignored(e.CommandName) {
		delete(c.ignoredReq, e.RequestID)
		return
	}
	if !c.listening || !c.observe["commandFailedEvent"] {
		return
	}
	c.commands = append(c.commands, observedEvent{
		kind: "commandFailedEvent", commandName: e.CommandName, databaseName: e.DatabaseName,
		serverConnectionID: e.ServerConnectionID, serviceID: e.ServiceID,
	})
}

// poolEventKinds maps the driver's pool event types to the format's names.
var poolEventKinds = map[string]string{
	event.ConnectionPoolCreated:     "poolCreatedEvent",
	event.ConnectionPoolReady:       "poolReadyEvent",
	event.ConnectionPoolCleared:     "poolClearedEvent",
	event.ConnectionPoolClosed:      "poolClosedEvent",
	event.ConnectionCreated:         "connectionCreatedEvent",
	event.ConnectionReady:           "connectionReadyEvent",
	event.ConnectionClosed:          "connectionClosedEvent",
	event.ConnectionCheckOutStarted: "connectionCheckOutStartedEvent",
	event.ConnectionCheckOutFailed:  "connectionCheckOutFailedEvent",
	event.ConnectionCheckedOut:      "connectionCheckedOutEvent",
	event.ConnectionCheckedIn:       "connectionCheckedInEvent",
}

func (c *clientEntity) poolEvent(e *event.PoolEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch e.Type {
	case event.ConnectionCheckedOut:
		c.checkedOut++
	case event.ConnectionCheckedIn:
		c.checkedOut--
	}
	kind := poolEventKinds[e.Type]
	if !c.listening || !c.observe[kind] {
		return
	}
	c.cmap = append(c.cmap, observedEvent{kind: kind, reason: e.Reason, serviceID: e.ServiceID, interruption: e.Interruption})
}

// events returns a copy of the observed events of one type ("command" or
// "cmap").
func (c *clientEntity) events(eventType string) []observedEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	if eventType == "cmap" {
		return append([]observedEvent(nil), c.cmap...)
	}
	return append([]observedEvent(nil), c.commands...)
}

// lastStartedLsids returns the lsid of the last two commandStartedEvents.
func (c *clientEntity) lastStartedLsids() (bson.Raw, bson.Raw, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var started []observedEvent
	for _, e := range c.commands {
		if e.kind == "commandStartedEvent" {
			started = append(started, e)
		}
	}
	if len(started) < 2 {
		return nil, nil, fmt.Errorf("fewer than two commandStartedEvents observed on %s", c.id)
	}
	a, errA := started[len(started)-2].command.LookupErr("lsid")
	b, errB := started[len(started)-1].command.LookupErr("lsid")
	if errA != nil || errB != nil {
		return nil, nil, fmt.Errorf("one of the last two commands on %s has no lsid", c.id)
	}
	return a.Document(), b.Document(), nil
}

func (c *clientEntity) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = c.client.Disconnect(ctx)
}

// lsidKey is the session id of an lsid document ({id: UUID}).
func lsidKey(v bson.RawValue) (string, bool) {
	doc, ok := v.DocumentOK()
	if !ok {
		return "", false
	}
	_, data, ok := doc.Lookup("id").BinaryOK()
	return string(data), ok
}

// sessionDirty reports whether a command of the session with lsid met a
// network error.
func (c *clientEntity) sessionDirty(lsid bson.Raw) bool {
	id, ok := lsidKey(bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: lsid})
	if !ok {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dirtyLsids[id]
}
