//go:build !unix

package runner

import (
	"errors"
	"os"
)

var errNoFlock = errors.New("file locks (flock) are not available on this system")

func tryFlock(*os.File) (bool, error) { return false, errNoFlock }
func waitFlock(*os.File) error        { return errNoFlock }
func unflock(*os.File) error          { return errNoFlock }

func openLockFile(path string, _ os.FileMode) (*os.File, error) { return nil, errNoFlock }
func openLockDir(string) error                                  { return errNoFlock }
