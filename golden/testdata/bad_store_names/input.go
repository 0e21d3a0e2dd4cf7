package bad

// Names that only some stores cannot hold: a collection named like
// another aggregate's DynamoDB index table (Player__index), a collection
// whose name has Redis's key separators, a collection DynamoDB cannot
// name a table after.
type Player struct {
	_    struct{} `noam:"aggregate"`
	ID   string   `noam:"id"`
	Nick string   `noam:"lookup"`
}

type Index struct {
	_  struct{} `noam:"aggregate,collection=Player__index"`
	ID string   `noam:"id"`
}

type Session struct {
	_  struct{} `noam:"aggregate,collection=sessions:v2"`
	ID string   `noam:"id"`
}

type Score struct {
	_  struct{} `noam:"aggregate,collection=scores#2026"`
	ID string   `noam:"id"`
}
