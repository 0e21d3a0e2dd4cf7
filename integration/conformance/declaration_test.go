package conformance

import (
	"context"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// commands counts the commands the conformance suite's clients send, as
// the MongoDB declaration (runtime/mongostore/layout) counts requests:
// one per command (a cursor's getMore included).
var commands atomic.Int64

func sent() int { return int(commands.Load()) }

// counting is the client options of the suite's clients: a command
// monitor that counts.
func counting() *options.ClientOptions {
	return options.Client().SetMonitor(&event.CommandMonitor{
		Started: func(context.Context, *event.CommandStartedEvent) { commands.Add(1) },
	})
}
