package standin_test

import (
	"testing"

	"github.com/forgedaemon/forged/ane/coreai/standin/standintest"
)

// The tests build the stand-in bridge once into a temporary directory,
// attach it, and run ane/coreai over packages this package wrote for the
// tiny synthetic model, comparing with ane/ref (standintest).

func TestMain(m *testing.M) { standintest.Main(m) }
