// Command golog checks an fxev transparency log with Go's reference code, independently of fxev:
// the checkpoint's signature (golang.org/x/mod/sumdb/note), then, from the C2SP tiles read through
// tlog.TileHashReader (which checks every tile against the signed root), an inclusion proof of
// every leaf of the entry bundles against the root and a consistency proof from every smaller
// tree size. Usage: golog BASE_URL VKEY. It prints one line "ok ..." and exits 0, or the first
// failure on stderr and exits 1.
package main

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

var base string

func get(path string) ([]byte, error) {
	resp, err := http.Get(base + "/v1/log/" + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// c2spPath is a tile's C2SP tlog-tiles path: Go's path without the height.
func c2spPath(t tlog.Tile) string {
	return "tile/" + strings.TrimPrefix(t.Path(), "tile/8/")
}

type tileReader struct{}

func (tileReader) Height() int { return 8 }

func (tileReader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		data, err := get(c2spPath(t))
		if err != nil {
			return nil, err
		}
		out[i] = data
	}
	return out, nil
}

func (tileReader) SaveTiles([]tlog.Tile, [][]byte) {}

func entries(size int64) ([][]byte, error) {
	var all [][]byte
	for n := int64(0); n*256 < size; n++ {
		w := size - n*256
		if w > 256 {
			w = 256
		}
		t := tlog.Tile{H: 8, L: 0, N: n, W: int(w)}
		path := "tile/entries/" + strings.TrimPrefix(c2spPath(t), "tile/0/")
		data, err := get(path)
		if err != nil {
			return nil, err
		}
		for len(data) > 0 {
			if len(data) < 2 {
				return nil, fmt.Errorf("%s: cut length", path)
			}
			length := int(binary.BigEndian.Uint16(data))
			if len(data) < 2+length {
				return nil, fmt.Errorf("%s: cut entry", path)
			}
			all = append(all, data[2:2+length])
			data = data[2+length:]
		}
	}
	return all, nil
}

func run(vkey string) (string, error) {
	verifier, err := note.NewVerifier(vkey)
	if err != nil {
		return "", err
	}
	signed, err := get("checkpoint")
	if err != nil {
		return "", err
	}
	n, err := note.Open(signed, note.VerifierList(verifier))
	if err != nil {
		return "", fmt.Errorf("checkpoint: %v", err)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) < 4 || lines[0] != verifier.Name() {
		return "", fmt.Errorf("checkpoint: origin is not %s", verifier.Name())
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		return "", fmt.Errorf("checkpoint size: %v", err)
	}
	root, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(root) != tlog.HashSize {
		return "", fmt.Errorf("checkpoint root is not a base64 hash")
	}
	var tree tlog.Tree
	tree.N = size
	copy(tree.Hash[:], root)
	reader := tlog.TileHashReader(tree, tileReader{})
	leaves, err := entries(size)
	if err != nil {
		return "", err
	}
	if int64(len(leaves)) != size {
		return "", fmt.Errorf("%d entries for a tree of %d", len(leaves), size)
	}
	for i, leaf := range leaves {
		proof, err := tlog.ProveRecord(size, int64(i), reader)
		if err != nil {
			return "", fmt.Errorf("prove leaf %d: %v", i, err)
		}
		if err := tlog.CheckRecord(proof, size, tree.Hash, int64(i), tlog.RecordHash(leaf)); err != nil {
			return "", fmt.Errorf("leaf %d: %v", i, err)
		}
	}
	for m := int64(1); m < size; m++ {
		old, err := tlog.TreeHash(m, reader)
		if err != nil {
			return "", err
		}
		proof, err := tlog.ProveTree(size, m, reader)
		if err != nil {
			return "", err
		}
		if err := tlog.CheckTree(proof, size, tree.Hash, m, old); err != nil {
			return "", fmt.Errorf("consistency %d -> %d: %v", m, size, err)
		}
	}
	return fmt.Sprintf("ok %s size=%d inclusion=%d consistency=%d", verifier.Name(), size, size, size-1), nil
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: golog BASE_URL VKEY")
		os.Exit(2)
	}
	base = strings.TrimRight(os.Args[1], "/")
	line, err := run(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "golog:", err)
		os.Exit(1)
	}
	fmt.Println(line)
}
