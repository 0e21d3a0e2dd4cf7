// Package migrate is `noamgen migrate`: it rewrites the blocks of every
// aggregate of a package that are stored in an older layout into the
// current one, on one store, by calling the generated repositories'
// Migrate. Those are the user's code, so the command writes a small main
// package inside the user's module (Program), runs it with `go run`, reads
// the events it prints (one JSON object a line), draws the progress and
// writes the report (Run). This package links no database driver: the
// program does.
package migrate

import (
	"bytes"
	"fmt"
	"go/format"
	"slices"
	"strings"
	"text/template"

	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/templates"
)

// EnvConfig is the environment variable through which the program receives
// its Config as JSON (connection strings stay out of the source file and
// of the command line).
const EnvConfig = "NOAMGEN_MIGRATE"

// Config is what the program is run with.
type Config struct {
	DryRun bool `json:"dryRun"`
	Batch  int  `json:"batch"`
	// Conn are the connection settings by name, as for
	// `noamgen explain -sample` ("bolt", "mongo", "db", "redis", "dynamo",
	// "dynamo-prefix").
	Conn map[string]string `json:"conn"`
}

// Event is one line the program prints on its standard output.
type Event struct {
	Aggregate string `json:"aggregate"`
	// Phase is "count" (a first pass that counts the blocks, writing
	// nothing, before a real run), "dry-run" or "migrate".
	Phase    string   `json:"phase"`
	Scanned  int      `json:"scanned"`
	Migrated int      `json:"migrated"`
	Current  int      `json:"current"`
	Failed   []Failed `json:"failed,omitempty"`
	// Done is set on the last event of a phase.
	Done bool `json:"done,omitempty"`
	// Error is why the phase stopped early (the store failed).
	Error string `json:"error,omitempty"`
}

// Failed is a block that could not be migrated.
type Failed struct {
	ID   string `json:"id"`
	From string `json:"from,omitempty"`
	Err  string `json:"err"`
}

// opening is how the program opens one store: the imports it needs, the
// statements that set the variable store (returning 1 from run on
// failure, with defers to close it) and the constructor's arguments.
type opening struct {
	imports []string
	open    string
	args    string
}

var openings = map[string]opening{
	"bolt": {
		imports: []string{"time", "go.etcd.io/bbolt"},
		open: `if conn["bolt"] == "" {
		fmt.Fprintln(os.Stderr, "noamgen migrate: -store bolt needs -bolt FILE")
		return 2
	}
	db, err := bbolt.Open(conn["bolt"], 0o600, &bbolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		fmt.Fprintf(os.Stderr, "noamgen migrate: opening %s: %v\n", conn["bolt"], err)
		return 1
	}
	defer db.Close()`,
		args: "db",
	},
	"mongo": {
		imports: []string{"go.mongodb.org/mongo-driver/v2/mongo", "go.mongodb.org/mongo-driver/v2/mongo/options"},
		open: `if conn["mongo"] == "" || conn["db"] == "" {
		fmt.Fprintln(os.Stderr, "noamgen migrate: -store mongo needs -mongo URI and -db NAME")
		return 2
	}
	client, err := mongo.Connect(options.Client().ApplyURI(conn["mongo"]))
	if err != nil {
		fmt.Fprintf(os.Stderr, "noamgen migrate: connecting to MongoDB: %v\n", err)
		return 1
	}
	defer client.Disconnect(context.WithoutCancel(ctx))
	db := client.Database(conn["db"])`,
		args: "db",
	},
	"redis": {
		imports: []string{"strings", "github.com/redis/go-redis/v9"},
		open: `if conn["redis"] == "" {
		fmt.Fprintln(os.Stderr, "noamgen migrate: -store redis needs -redis URL")
		return 2
	}
	opt, err := redis.ParseURL(conn["redis"])
	if err != nil {
		fmt.Fprintf(os.Stderr, "noamgen migrate: -redis: %v\n", err)
		return 2
	}
	var rdb redis.UniversalClient = redis.NewClient(opt)
	info, err := rdb.Info(ctx, "cluster").Result()
	if err != nil {
		fmt.Fprintf(os.Stderr, "noamgen migrate: connecting to Redis at %s: %v\n", opt.Addr, err)
		return 1
	}
	if strings.Contains(info, "cluster_enabled:1") {
		rdb.Close()
		rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{opt.Addr}, Username: opt.Username, Password: opt.Password, TLSConfig: opt.TLSConfig})
	}
	defer rdb.Close()`,
		args: "rdb",
	},
	"dynamo": {
		imports: []string{"github.com/aws/aws-sdk-go-v2/aws", "github.com/aws/aws-sdk-go-v2/credentials", "github.com/aws/aws-sdk-go-v2/service/dynamodb", "github.com/noamgen/noamgen/runtime/dynamostore"},
		open: `if conn["dynamo"] == "" {
		fmt.Fprintln(os.Stderr, "noamgen migrate: -store dynamo needs -dynamo URL")
		return 2
	}
	cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(conn["dynamo"]),
		Credentials: credentials.NewStaticCredentialsProvider("noam", "noam", "")}
	if r := os.Getenv("AWS_REGION"); r != "" {
		cfg.Region = r
	}
	if id := os.Getenv("AWS_ACCESS_KEY_ID"); id != "" {
		cfg.Credentials = credentials.NewStaticCredentialsProvider(id, os.Getenv("AWS_SECRET_ACCESS_KEY"), os.Getenv("AWS_SESSION_TOKEN"))
	}
	client := dynamodb.NewFromConfig(cfg)`,
		args: `client, dynamostore.Options{TablePrefix: conn["dynamo-prefix"]}`,
	},
}

// Stores lists the stores the command can migrate.
func Stores() []string {
	var out []string
	for st := range openings {
		out = append(out, st)
	}
	slices.Sort(out)
	return out
}

var program = template.Must(template.New("main").Parse(`// Code written by noamgen migrate, which runs it and removes it.

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
{{range .Std}}	{{printf "%q" .}}
{{end}}
{{range .Imports}}	{{printf "%q" .}}
{{end}}	"github.com/noamgen/noamgen/runtime"

	pkg {{printf "%q" .PkgPath}}
)

type failed struct {
	ID   string ` + "`json:\"id\"`" + `
	From string ` + "`json:\"from,omitempty\"`" + `
	Err  string ` + "`json:\"err\"`" + `
}

type event struct {
	Aggregate string   ` + "`json:\"aggregate\"`" + `
	Phase     string   ` + "`json:\"phase\"`" + `
	Scanned   int      ` + "`json:\"scanned\"`" + `
	Migrated  int      ` + "`json:\"migrated\"`" + `
	Current   int      ` + "`json:\"current\"`" + `
	Failed    []failed ` + "`json:\"failed,omitempty\"`" + `
	Done      bool     ` + "`json:\"done,omitempty\"`" + `
	Error     string   ` + "`json:\"error,omitempty\"`" + `
}

type migrator func(context.Context, runtime.MigrateOptions) (runtime.MigrateReport, error)

func main() { os.Exit(run()) }

func run() int {
	var settings struct {
		DryRun bool              ` + "`json:\"dryRun\"`" + `
		Batch  int               ` + "`json:\"batch\"`" + `
		Conn   map[string]string ` + "`json:\"conn\"`" + `
	}
	if err := json.Unmarshal([]byte(os.Getenv({{printf "%q" .Env}})), &settings); err != nil {
		fmt.Fprintln(os.Stderr, "noamgen migrate: this program is run by noamgen migrate:", err)
		return 2
	}
	conn := settings.Conn
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	{{.Open}}
	aggregates := []struct {
		name    string
		migrate migrator
	}{
{{range .Repos}}		{ {{- printf "%q" .Name}}, pkg.{{.Constructor}}({{$.Args}}).Migrate},
{{end}}	}
	out := json.NewEncoder(os.Stdout)
	for _, a := range aggregates {
		if !settings.DryRun && !pass(ctx, out, a.name, "count", a.migrate, runtime.MigrateOptions{DryRun: true, Batch: settings.Batch}) {
			return 1
		}
		phase := "migrate"
		if settings.DryRun {
			phase = "dry-run"
		}
		if !pass(ctx, out, a.name, phase, a.migrate, runtime.MigrateOptions{DryRun: settings.DryRun, Batch: settings.Batch}) {
			return 1
		}
	}
	return 0
}

// pass runs one Migrate over the aggregate's collection, printing an event
// after each batch and at the end; it reports whether the store answered.
func pass(ctx context.Context, out *json.Encoder, name, phase string, migrate migrator, o runtime.MigrateOptions) bool {
	ev := func(r runtime.MigrateReport) event {
		e := event{Aggregate: name, Phase: phase, Scanned: r.Scanned, Migrated: r.Migrated, Current: r.Current}
		for _, b := range r.Failed {
			e.Failed = append(e.Failed, failed{ID: fmt.Sprint(b.ID), From: b.From, Err: fmt.Sprint(b.Err)})
		}
		return e
	}
	o.Progress = func(r runtime.MigrateReport) {
		e := ev(r)
		e.Failed = nil
		out.Encode(e)
	}
	r, err := migrate(ctx, o)
	e := ev(r)
	e.Done = true
	if err != nil {
		e.Error = err.Error()
	}
	out.Encode(e)
	return err == nil
}
`))

// Repo is one aggregate's repository on the chosen store.
type Repo struct {
	Name        string // the aggregate's type name
	Constructor string // its constructor, e.g. NewPlayerBoltRepository
}

// Program returns the source of the main package that migrates every
// aggregate of s on store.
func Program(s *model.Schema, store string) ([]byte, error) {
	op, ok := openings[store]
	if !ok {
		return nil, fmt.Errorf("cannot migrate store %q (known: %s)", store, strings.Join(Stores(), ", "))
	}
	if len(s.Aggregates) == 0 {
		return nil, fmt.Errorf("package %s declares no aggregate", s.PkgPath)
	}
	data := struct {
		Std, Imports []string
		PkgPath      string
		Env          string
		Open, Args   string
		Repos        []Repo
	}{PkgPath: s.PkgPath, Env: EnvConfig, Open: op.open, Args: op.args}
	for _, imp := range op.imports {
		if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") {
			data.Imports = append(data.Imports, imp)
		} else {
			data.Std = append(data.Std, imp)
		}
	}
	for _, a := range s.Aggregates {
		data.Repos = append(data.Repos, Repo{Name: a.Name, Constructor: "New" + templates.StoreRepo(a, templates.StoreTitle(store))})
	}
	var b bytes.Buffer
	if err := program.Execute(&b, data); err != nil {
		return nil, err
	}
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("the migration program does not parse: %w\n%s", err, b.Bytes())
	}
	return src, nil
}
