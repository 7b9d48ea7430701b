package views_test

import (
	"go/types"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"

	"github.com/rundbrief/rundbrief/views"
)

// TestInterfaceTextIsNeverEmpty fails on any empty string in the German
// interface text: an empty string renders as a blank button or an empty page,
// which no reviewer notices in a diff.
func TestInterfaceTextIsNeverEmpty(t *testing.T) {
	var empty []string
	walkText(reflect.ValueOf(views.German()), "Text", func(path string, s string) {
		if strings.TrimSpace(s) == "" {
			empty = append(empty, path)
		}
	})
	if len(empty) > 0 {
		t.Errorf("empty interface text (fill it in or remove the field):\n  %s", strings.Join(empty, "\n  "))
	}
}

// walkText calls fn for every string reachable from v, with its field path.
func walkText(v reflect.Value, path string, fn func(path, s string)) {
	switch v.Kind() {
	case reflect.String:
		fn(path, v.String())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if f := v.Type().Field(i); f.IsExported() {
				walkText(v.Field(i), path+"."+f.Name, fn)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			walkText(v.Index(i), path+"["+string(rune('0'+i%10))+"]", fn)
		}
	case reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		for _, k := range keys {
			walkText(v.MapIndex(k), path+"["+k.String()+"]", fn)
		}
	}
}

// TestInterfaceTextIsUsed fails on a field of views.Text that no code outside
// text.go reads: such a string was either forgotten in a view or is left over
// from one, and in both cases the interface does not say what text.go says.
// It asks the type checker, so a field counts as used only where the code
// selects that very field, not one of the same name elsewhere.
func TestInterfaceTextIsUsed(t *testing.T) {
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo,
		Dir:  "..",
	}
	pkgs, err := packages.Load(cfg, "./views", "./handlers/...")
	if err != nil {
		t.Fatal(err)
	}
	var textType *types.Named
	used := map[*types.Var]bool{}
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Fatalf("load %s: %v", p.PkgPath, e)
		}
		if p.PkgPath == "github.com/rundbrief/rundbrief/views" {
			if obj, ok := p.Types.Scope().Lookup("Text").(*types.TypeName); ok {
				textType, _ = obj.Type().(*types.Named)
			}
		}
		for id, obj := range p.TypesInfo.Uses {
			v, ok := obj.(*types.Var)
			if !ok || !v.IsField() {
				continue
			}
			// The composite literals in text.go name every field; they define
			// the text, they do not use it.
			if filepath.Base(p.Fset.Position(id.Pos()).Filename) == "text.go" {
				continue
			}
			used[v] = true
		}
	}
	if textType == nil {
		t.Fatal("views.Text not found")
	}
	var unused []string
	walkFields(textType, "Text", map[types.Type]bool{}, func(path string, f *types.Var) {
		if !used[f] {
			unused = append(unused, path)
		}
	})
	if len(unused) > 0 {
		t.Errorf("interface text that no view or handler shows (use it or remove it):\n  %s", strings.Join(unused, "\n  "))
	}
}

// walkFields calls fn for every string field in the struct tree of typ: the
// strings themselves, and the slices of strings, whose field is what code reads.
func walkFields(typ types.Type, path string, seen map[types.Type]bool, fn func(path string, f *types.Var)) {
	st, ok := typ.Underlying().(*types.Struct)
	if !ok || seen[typ] {
		return
	}
	seen[typ] = true
	for i := 0; i < st.NumFields(); i++ {
		f := st.Field(i)
		if !f.Exported() {
			continue
		}
		p := path + "." + f.Name()
		switch ft := f.Type().Underlying().(type) {
		case *types.Basic:
			if ft.Kind() == types.String {
				fn(p, f)
			}
		case *types.Struct:
			walkFields(f.Type(), p, seen, fn)
		case *types.Slice:
			if _, ok := ft.Elem().Underlying().(*types.Struct); ok {
				fn(p, f)
				walkFields(ft.Elem(), p+"[]", seen, fn)
			} else {
				fn(p, f)
			}
		case *types.Map:
			fn(p, f)
		}
	}
}
