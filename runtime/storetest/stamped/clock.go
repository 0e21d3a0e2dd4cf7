package stamped

import (
	"fmt"
	"time"

	"github.com/noamgen/noamgen/runtime"
)

// WithClock returns the repositories the generated constructors made,
// reading the time from now (runtime.WithClock), on the same stores.
func WithClock(posts PostRepository, notes NoteRepository, now func() time.Time) (PostRepository, NoteRepository) {
	return _postRepo{runtime.NewRepo(_postDesc, postStore(posts), runtime.WithClock(now))},
		_noteRepo{runtime.NewRepo(_noteDesc, noteStore(notes), runtime.WithClock(now))}
}

func postStore(r PostRepository) runtime.Store[Post, string] {
	switch r := r.(type) {
	case *PostBoltRepository:
		return r.store
	case *PostRedisRepository:
		return r.store
	case *PostDynamoRepository:
		return r.store
	case *PostMongoRepository:
		return r.store
	}
	panic(fmt.Sprintf("stamped: %T is no generated Post repository", r))
}

func noteStore(r NoteRepository) runtime.Store[Note, string] {
	switch r := r.(type) {
	case *NoteBoltRepository:
		return r.store
	case *NoteRedisRepository:
		return r.store
	case *NoteDynamoRepository:
		return r.store
	case *NoteMongoRepository:
		return r.store
	}
	panic(fmt.Sprintf("stamped: %T is no generated Note repository", r))
}
