package unified

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// checkEvents compares one client's observed events with the expected
// list, in order.
func (t *testRun) checkEvents(exp ExpectedEvents) error {
	c, err := t.entities.client(exp.Client)
	if err != nil {
		return err
	}
	eventType := exp.EventType
	if eventType == "" {
		eventType = "command"
	}
	if eventType != "command" && eventType != "cmap" {
		return fmt.Errorf("runner: expectEvents eventType %s not implemented", eventType)
	}
	got := c.events(eventType)
	for i, want := range exp.Events {
		if i >= len(got) {
			return fmt.Errorf("%s: %d events observed, want %d; missing event %d: %s", exp.Client, len(got), len(exp.Events), i, want)
		}
		if err := t.matchEvent(want, got[i]); err != nil {
			return fmt.Errorf("%s event %d (%s): %w", exp.Client, i, describeEvent(got[i]), err)
		}
	}
	if !exp.IgnoreExtraEvents && len(got) > len(exp.Events) {
		return fmt.Errorf("%s: %d events observed, want %d; extra: %s", exp.Client, len(got), len(exp.Events), describeEvent(got[len(exp.Events)]))
	}
	return nil
}

func describeEvent(e observedEvent) string {
	if e.commandName != "" {
		return e.kind + " " + e.commandName
	}
	return e.kind
}

func (t *testRun) matchEvent(want bson.Raw, got observedEvent) error {
	elems, err := want.Elements()
	if err != nil || len(elems) != 1 {
		return fmt.Errorf("runner: expected event %s", want)
	}
	kind := elems[0].Key()
	if kind != got.kind {
		return fmt.Errorf("got %s, want %s", got.kind, kind)
	}
	a := newArgs(kind, elems[0].Value().Document())
	if s, ok, err := a.str("commandName"); err != nil {
		return err
	} else if ok && s != got.commandName {
		return fmt.Errorf("command %s, want %s", got.commandName, s)
	}
	if s, ok, err := a.str("databaseName"); err != nil {
		return err
	} else if ok && s != got.databaseName {
		return fmt.Errorf("database %s, want %s", got.databaseName, s)
	}
	if d, ok, err := a.doc("command"); err != nil {
		return err
	} else if ok {
		if err := Match(docValue(d), docValue(got.command), true, t.entities); err != nil {
			return fmt.Errorf("command: %w", err)
		}
	}
	if d, ok, err := a.doc("reply"); err != nil {
		return err
	} else if ok {
		if err := Match(docValue(d), docValue(got.reply), true, t.entities); err != nil {
			return fmt.Errorf("reply: %w", err)
		}
	}
	if b, ok, err := a.boolean("hasServiceId"); err != nil {
		return err
	} else if ok && b != (got.serviceID != nil && !got.serviceID.IsZero()) {
		return fmt.Errorf("hasServiceId is %v", !b)
	}
	if b, ok, err := a.boolean("hasServerConnectionId"); err != nil {
		return err
	} else if ok && b != (got.serverConnectionID != nil && *got.serverConnectionID > 0) {
		return fmt.Errorf("hasServerConnectionId is %v", !b)
	}
	if s, ok, err := a.str("reason"); err != nil {
		return err
	} else if ok && s != got.reason {
		return fmt.Errorf("reason %q, want %q", got.reason, s)
	}
	if b, ok, err := a.boolean("interruptInUseConnections"); err != nil {
		return err
	} else if ok && b != got.interruption {
		return fmt.Errorf("interruptInUseConnections is %v", got.interruption)
	}
	return a.finish()
}
