//go:build linux || solaris || aix

package cli

import "golang.org/x/sys/unix"

const ioctlGetTermios = unix.TCGETS
