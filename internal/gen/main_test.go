package gen

import (
	"os"
	"testing"
)

// TestMain gives PoCL a kernel cache of this test binary's own (the harnesses get one each).
func TestMain(m *testing.M) {
	if os.Getenv("POCL_CACHE_DIR") == "" {
		dir, err := os.MkdirTemp("", "tempest-pocl-")
		if err == nil {
			os.Setenv("POCL_CACHE_DIR", dir)
			code := m.Run()
			os.RemoveAll(dir)
			os.Exit(code)
		}
	}
	os.Exit(m.Run())
}
