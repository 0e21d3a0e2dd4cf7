// Package dyntest runs DynamoDB tests that need transactions on minidyn
// (github.com/truora/minidyn), an in-process DynamoDB written in Go, which
// has TransactWriteItems where dynalite has none. It needs Go 1.26, hence
// its place in the integration module: the main module keeps its go
// directive. NOAM_DYNAMO_ENDPOINT points every test at that endpoint
// instead (as runtime/dynamostore/dynalitetest does).
//
// minidyn's gaps are worked around here, in an HTTP middleware in front of
// its handler, never in the adapter:
//
//   - DescribeTable reports an empty TableStatus: answered as ACTIVE (a
//     table is active as soon as CreateTable returns), so that
//     EnsureIndexes' wait ends;
//   - no ListTables: answered from the CreateTable requests seen;
//   - an out-of-range list index panics its handler: the panic is
//     answered as the ValidationException DynamoDB gives for an invalid
//     document path;
//   - size() of a missing attribute is refused where DynamoDB evaluates
//     the condition to false: answered as the failed condition;
//   - empty lists and maps come back as {} (minidyn's wire type omits
//     empty members, so the type is lost): answered as NULL, which the
//     adapter reads as a nil slice or map;
//   - TransactWriteItems ignores its ClientRequestToken: a transaction
//     sent again with the token of one that succeeded is answered as
//     DynamoDB answers it (success, nothing applied again), and with other
//     parameters as IdempotentParameterMismatchException (tokens do not
//     expire here; DynamoDB forgets them after 10 minutes).
//
// Gaps it cannot work around make Harness skip the subtests they break,
// each with its reason (minidynGaps).
package dyntest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/truora/minidyn/server"

	"github.com/noamgen/noamgen/runtime/dynamostore/dynalitetest"
)

// Server is a minidyn server on 127.0.0.1, or the endpoint of
// NOAM_DYNAMO_ENDPOINT.
type Server struct {
	// Endpoint is the server's URL.
	Endpoint string
	// External: NOAM_DYNAMO_ENDPOINT, not minidyn.
	External bool
	ext      *dynalitetest.Server
}

// Start starts minidyn for t (or uses NOAM_DYNAMO_ENDPOINT) and stops it
// when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	if os.Getenv(dynalitetest.EnvEndpoint) != "" {
		ext := dynalitetest.Start(t)
		return &Server{Endpoint: ext.Endpoint, External: true, ext: ext}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("minidyn: %v", err)
	}
	srv := &http.Server{Handler: &gaps{next: server.NewServer()}}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return &Server{Endpoint: "http://" + l.Addr().String()}
}

// Client returns a client of the server with static dummy credentials and
// region us-east-1; opts change its options.
func (s *Server) Client(opts ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("noam", "noam", ""),
		BaseEndpoint: aws.String(s.Endpoint),
	}, opts...)
}

// Prefix returns a table-name prefix no other test of the process uses
// (on NOAM_DYNAMO_ENDPOINT, its tables are deleted when t ends).
func (s *Server) Prefix(t testing.TB) string {
	if s.ext != nil {
		return s.ext.Prefix(t)
	}
	return fmt.Sprintf("t%d_", seq.Add(1))
}

var seq atomic.Int64

// gaps is the middleware that answers where minidyn falls short.
type gaps struct {
	next   http.Handler
	mu     sync.Mutex
	tables []string
	// tokens holds, per ClientRequestToken of a TransactWriteItems that
	// succeeded, its request (decoded: the SDK writes maps in any order)
	// and reply.
	tokens map[string]sent
}

func (g *gaps) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	op := target[strings.LastIndexByte(target, '.')+1:]
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if op == "ListTables" {
		g.listTables(w)
		return
	}
	var token string
	var req any
	if op == "TransactWriteItems" {
		var in struct{ ClientRequestToken string }
		if json.Unmarshal(body, &in) == nil && json.Unmarshal(body, &req) == nil {
			token = in.ClientRequestToken
		}
		g.mu.Lock()
		seen, ok := g.tokens[token]
		g.mu.Unlock()
		switch {
		case token == "" || !ok:
		case reflect.DeepEqual(seen.req, req):
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			_, _ = w.Write(seen.reply)
			return
		default:
			writeErr(w, "IdempotentParameterMismatchException", "The request uses the same client token as a previous, but non-identical request.")
			return
		}
	}
	rec, panicked := g.serve(r, body)
	if panicked != nil {
		rec = &recorder{header: http.Header{}, code: http.StatusOK}
		writeErr(rec, "ValidationException", fmt.Sprintf("The document path provided in the update expression is invalid for update (minidyn: %v)", panicked))
	}
	out := rec.body.Bytes()
	switch {
	case op == "CreateTable" && rec.code == http.StatusOK:
		var in struct{ TableName string }
		if json.Unmarshal(body, &in) == nil {
			g.mu.Lock()
			g.tables = append(g.tables, in.TableName)
			g.mu.Unlock()
		}
	case op == "DescribeTable" && rec.code == http.StatusOK:
		out = active(out)
	case token != "" && rec.code == http.StatusOK:
		g.mu.Lock()
		if g.tokens == nil {
			g.tokens = map[string]sent{}
		}
		g.tokens[token] = sent{req, out}
		g.mu.Unlock()
	case rec.code == http.StatusOK:
		out = typed(out)
	case op == "TransactWriteItems" && bytes.Contains(out, []byte("TransactionCanceledException")):
		g.retype(r, body)
	case rec.code == http.StatusBadRequest && missingSize(out):
		rec.header = http.Header{}
		rec.body.Reset()
		writeErr(rec, "ConditionalCheckFailedException", "The conditional request failed")
		out = rec.body.Bytes()
	}
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(out)))
	w.WriteHeader(rec.code)
	_, _ = w.Write(out)
}

// sent is a TransactWriteItems request that succeeded, and its reply.
type sent struct {
	req   any
	reply []byte
}

// serve has minidyn answer a request with body, recovering a panic.
func (g *gaps) serve(r *http.Request, body []byte) (rec *recorder, panicked any) {
	rec = &recorder{header: http.Header{}, code: http.StatusOK}
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(body))
	defer func() { panicked = recover() }()
	g.next.ServeHTTP(rec, r2)
	return rec, nil
}

// retype puts back, with their empty lists and maps as NULL, the items
// of the tables of a cancelled transaction (body): minidyn restores those
// tables from a copy that drops the type of every empty list or map (an
// attribute of no type, which its expressions then refuse).
func (g *gaps) retype(r *http.Request, body []byte) {
	var in struct {
		TransactItems []map[string]struct{ TableName string }
	}
	if json.Unmarshal(body, &in) != nil {
		return
	}
	tables := map[string]bool{}
	for _, it := range in.TransactItems {
		for _, op := range it {
			tables[op.TableName] = true
		}
	}
	call := func(op string, in any) []byte {
		b, _ := json.Marshal(in)
		req := r.Clone(r.Context())
		req.Header = r.Header.Clone()
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
		rec, _ := g.serve(req, b)
		return rec.body.Bytes()
	}
	for table := range tables {
		var start any
		for {
			scan := map[string]any{"TableName": table}
			if start != nil {
				scan["ExclusiveStartKey"] = start
			}
			var page struct {
				Items            []json.RawMessage
				LastEvaluatedKey any
			}
			raw := call("Scan", scan)
			if json.Unmarshal(raw, &page) != nil {
				break
			}
			for _, item := range page.Items {
				if bytes.Contains(item, []byte("{}")) {
					var fixed map[string]any
					if json.Unmarshal(typed([]byte(`{"Item":`+string(item)+`}`)), &fixed) == nil {
						call("PutItem", map[string]any{"TableName": table, "Item": fixed["Item"]})
					}
				}
			}
			if page.LastEvaluatedKey == nil {
				break
			}
			start = page.LastEvaluatedKey
		}
	}
}

// active sets an empty TableStatus of a DescribeTable reply to ACTIVE.
func active(out []byte) []byte {
	var reply map[string]map[string]any
	if json.Unmarshal(out, &reply) != nil || reply["Table"] == nil {
		return out
	}
	if s, _ := reply["Table"]["TableStatus"].(string); s == "" {
		reply["Table"]["TableStatus"] = "ACTIVE"
	}
	b, err := json.Marshal(reply)
	if err != nil {
		return out
	}
	return b
}

// typed gives the empty lists and maps of a reply's items, which minidyn
// sends as {} (its wire type omits empty members, so the type is lost),
// a type: NULL, which the adapter reads as a nil slice or map.
func typed(out []byte) []byte {
	if !bytes.Contains(out, []byte("{}")) {
		return out
	}
	var reply map[string]any
	if json.Unmarshal(out, &reply) != nil {
		return out
	}
	var value func(v any) any
	items := func(v any) {
		if m, ok := v.(map[string]any); ok {
			for k, av := range m {
				m[k] = value(av)
			}
		}
	}
	value = func(v any) any {
		av, ok := v.(map[string]any)
		if !ok {
			return v
		}
		if len(av) == 0 {
			return map[string]any{"NULL": true}
		}
		if m, ok := av["M"]; ok {
			items(m)
		}
		if l, ok := av["L"].([]any); ok {
			for i, e := range l {
				l[i] = value(e)
			}
		}
		return av
	}
	list := func(v any) {
		if l, ok := v.([]any); ok {
			for _, it := range l {
				items(it)
			}
		}
	}
	items(reply["Item"])
	items(reply["Attributes"])
	list(reply["Items"])
	switch r := reply["Responses"].(type) {
	case map[string]any: // BatchGetItem
		for _, l := range r {
			list(l)
		}
	case []any: // TransactGetItems
		for _, e := range r {
			if m, ok := e.(map[string]any); ok {
				items(m["Item"])
			}
		}
	}
	b, err := json.Marshal(reply)
	if err != nil {
		return out
	}
	return b
}

// missingSize reports minidyn's refusal of size() of a missing attribute,
// which DynamoDB evaluates as a false condition.
func missingSize(out []byte) bool {
	var e struct {
		Message string `json:"message"`
	}
	return json.Unmarshal(out, &e) == nil && strings.Contains(e.Message, "size") && (strings.Contains(e.Message, "NULL") || strings.Contains(strings.ToLower(e.Message), "missing"))
}

func (g *gaps) listTables(w http.ResponseWriter) {
	g.mu.Lock()
	names := slices.Clone(g.tables)
	g.mu.Unlock()
	slices.Sort(names)
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	_ = json.NewEncoder(w).Encode(map[string]any{"TableNames": names})
}

// writeErr writes a DynamoDB error reply.
func writeErr(w http.ResponseWriter, typ, msg string) {
	code := http.StatusBadRequest
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazonaws.dynamodb.v20120810#" + typ, "message": msg})
}

// recorder buffers a reply, so that the middleware can change it.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
	wrote  bool
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.code, r.wrote = code, true
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.body.Write(b)
}
