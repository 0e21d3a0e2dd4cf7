package bad

// Several compile errors are all reported, in order. Names noamgen would
// generate (GameRepository) are not errors: the generated files may be
// missing or stale.
import "strings"

type Game struct {
	_    struct{} `noam:"aggregate"`
	ID   string   `noam:"id"`
	Name string
}

var repo GameRepository = NewGameMongoRepository(nil)

func title(g Game) string {
	return strings.ToUpper(g.Nam) + missing
}

var _ int = "x"

var _ Gamer
