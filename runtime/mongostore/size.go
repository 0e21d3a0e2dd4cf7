package mongostore

import (
	"bytes"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver"

	"github.com/noamgen/noamgen/runtime"
)

// MaxDocumentBytes is the largest document MongoDB stores (16 MiB). The
// adapter checks every document it inserts or replaces, and every update
// command, against it before sending, so that a write over the limit
// fails with runtime.ErrTooLarge and changes nothing also on servers that
// do not enforce the limit (FerretDB v1 stores larger documents). An update
// whose own values fit but which makes the stored document grow past the
// limit is refused by MongoDB (mapped to runtime.ErrTooLarge, nothing
// changed); FerretDB v1 stores it.
const MaxDocumentBytes = 16 << 20

// encode marshals v as the driver would for a collection opened by
// Collection (nil slices as empty arrays) and fails with
// runtime.ErrTooLarge when the result is over MaxDocumentBytes. Passing
// the result to the driver saves it marshalling v again.
func encode(op, agg string, id any, v any) (bson.Raw, error) {
	var buf bytes.Buffer
	enc := bson.NewEncoder(bson.NewDocumentWriter(&buf))
	enc.NilSliceAsEmpty()
	if err := enc.Encode(v); err != nil {
		return nil, runtime.Fail(op, agg, id, runtime.ErrInvalid, err)
	}
	if buf.Len() > MaxDocumentBytes {
		return nil, tooLarge(op, agg, id, buf.Len(), nil)
	}
	return buf.Bytes(), nil
}

func tooLarge(op, agg string, id any, n int, cause error) error {
	detail := fmt.Sprintf("(MongoDB documents hold at most %d bytes)", MaxDocumentBytes)
	if n > 0 {
		detail = fmt.Sprintf("(%d bytes; MongoDB documents hold at most %d)", n, MaxDocumentBytes)
	}
	return runtime.FailAt(op, agg, id, detail, runtime.ErrTooLarge, cause)
}

// overLimit reports a write the server or the driver refused because a
// document would exceed the limit: BSONObjectTooLarge (10334), a document
// grown too large by an update (17419, 17420), or the driver's own check.
func overLimit(err error) bool {
	if errors.Is(err, driver.ErrDocumentTooLarge) {
		return true
	}
	var se mongo.ServerError
	return errors.As(err, &se) && (se.HasErrorCode(10334) || se.HasErrorCode(17419) || se.HasErrorCode(17420))
}
