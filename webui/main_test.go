package webui_test

import (
	"testing"

	"github.com/strata-store/strata/internal/testenv"
)

func TestMain(m *testing.M) { testenv.RunMain(m, testenv.WithLeakCheck(testenv.RunWithPostgres)) }
