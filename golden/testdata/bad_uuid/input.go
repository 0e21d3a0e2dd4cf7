package bad

// A UUID id is a string; uuid goes with id, not with counter.
type Order struct {
	_  struct{} `noam:"aggregate"`
	ID int64    `noam:"id,uuid"`
}

type Key struct {
	Shop string
	Num  string
}

type Line struct {
	_   struct{} `noam:"aggregate"`
	Key Key      `noam:"id,uuid=v4"`
}

type Invoice struct {
	_   struct{} `noam:"aggregate"`
	ID  string   `noam:"id,uuid=v5"`
	Ref string   `noam:"uuid"`
	Seq int64    `noam:"-"`
}

type Receipt struct {
	_  struct{} `noam:"aggregate"`
	ID int64    `noam:"id,uuid,counter"`
}
