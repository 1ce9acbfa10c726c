//go:build !amd64

package main

import "fmt"

func compat() { fmt.Println("no compat ABI probe on this architecture") }
