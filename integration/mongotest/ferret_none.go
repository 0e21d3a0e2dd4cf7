//go:build noferret

package mongotest

import "errors"

// server is never started in a build without FerretDB.
type server struct{ uri string }

func (*server) stop() {}

// startFerretDB fails: this build (-tags noferret) leaves FerretDB out,
// and the tests need a server named by NOAM_FERRETDB_URI or NOAM_MONGO_URI.
func startFerretDB(string) (*server, error) {
	return nil, errors.New("built with -tags noferret: set " + EnvFerretDBURI + " (a FerretDB started by cmd mongotest/ferretdb) or " + EnvURI)
}
