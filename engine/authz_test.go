package engine

import "testing"

// Every command has a privilege class: a command added without one would
// need clusterAdmin under --auth, which is safe but surprising.
func TestEveryCommandIsClassified(t *testing.T) {
	table := newCommandTable()
	table["configureFailPoint"] = command{name: "configureFailPoint"}
	for name, cmd := range table {
		if _, ok := commandClasses[cmd.name]; !ok {
			t.Errorf("command %s (%s) has no entry in commandClasses", name, cmd.name)
		}
	}
	for name := range commandClasses {
		if _, ok := table[name]; !ok {
			t.Errorf("commandClasses lists %s, which is no command", name)
		}
	}
}
