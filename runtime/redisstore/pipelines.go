package redisstore

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// The pipelines of a batch are bounded: a batch of any size goes in
// pipelines of at most MaxPipelineCommands commands and about
// MaxPipelineBytes bytes of arguments, sent one after the other, so that
// none outlasts the client's write and read timeouts (a pipeline is
// written within WriteTimeout and its replies read within ReadTimeout).
// A batch within both bounds is one pipeline per step, as declared.
var (
	MaxPipelineCommands = 1000
	MaxPipelineBytes    = 4 << 20
)

// pipeliner is a client that makes pipelines.
type pipeliner interface {
	Pipeline() redis.Pipeliner
}

// pipelines queues the commands of items 0 to n-1 in order, queue(p, j)
// those of item j, in pipelines of c bounded by MaxPipelineCommands and
// MaxPipelineBytes, each sent when full (an item's commands are never
// split) and the last at the end; a pipeline with no command is not sent.
// end, when not nil, queues the last commands of each pipeline before it
// is sent (a WAIT), last set for the pipeline sent at the end. It returns the first error of a pipeline sent (each
// command keeps its own).
func pipelines(ctx context.Context, c pipeliner, n int, queue func(p redis.Pipeliner, j int), end func(p redis.Pipeliner, last bool)) error {
	var first error
	p := c.Pipeline()
	size := 0
	send := func(last bool) {
		if p.Len() == 0 {
			return
		}
		if end != nil {
			end(p, last)
		}
		if _, err := p.Exec(ctx); err != nil && first == nil {
			first = err
		}
		p, size = c.Pipeline(), 0
	}
	for j := range n {
		if p.Len() >= MaxPipelineCommands || size >= MaxPipelineBytes {
			send(false)
		}
		before := p.Len()
		queue(p, j)
		for _, cmd := range p.Cmds()[before:] {
			size += argBytes(cmd)
		}
	}
	send(true)
	return first
}

// argBytes is about the size of cmd as sent: its arguments' bytes.
func argBytes(cmd redis.Cmder) int {
	n := 0
	for _, a := range cmd.Args() {
		switch a := a.(type) {
		case string:
			n += len(a)
		case []byte:
			n += len(a)
		default:
			n += 8
		}
	}
	return n
}
