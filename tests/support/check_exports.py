#!/usr/bin/env python3
"""check_exports.py HEADER LIBRARY: the library's dynamic symbols are exactly the functions the
C API header declares: each declared function is exported (a program linking only liblatke finds
it), and nothing else is (Latke's C++ layers, and the standard library's and Eigen's instances,
stay local; cmake/latke.map). Prints what differs."""
import re
import subprocess
import sys

header, library = sys.argv[1], sys.argv[2]
text = open(header).read()
text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
text = re.sub(r"//[^\n]*", "", text)
text = re.sub(r"^\s*#[^\n]*(\\\n[^\n]*)*", "", text, flags=re.M)  # preprocessor lines
# A declaration: a statement "return type, name, (parameters)"; typedefs (function pointers among
# them) and struct bodies are not.
declared = set()
for statement in re.split(r"[;{}]", text):
    m = re.fullmatch(r"\s*(?:PETSC_EXTERN\s+)?[A-Za-z_][\w\s\*]*?[\s\*]([A-Za-z_]\w*)\s*\([^()]*\)\s*", statement)
    if m and not statement.strip().startswith("typedef"):
        declared.add(m.group(1))
if len(declared) < 10:
    sys.exit(f"check_exports: found only {len(declared)} declarations in {header}; the parser is broken")
nm = subprocess.run(["nm", "-D", "--defined-only", library], capture_output=True, text=True, check=True).stdout
exported = set()
for line in nm.splitlines():
    parts = line.split()
    if len(parts) == 3 and parts[1] != "A":  # absolute symbols are the linker's (_edata, _end)
        exported.add(parts[2].split("@")[0])
missing = sorted(declared - exported)
extra = sorted(exported - declared)
for name in missing:
    print(f"declared in {header} but not exported by {library}: {name}")
for name in extra[:50]:
    print(f"exported by {library} but not declared in {header}: {name}")
if len(extra) > 50:
    print(f"... and {len(extra) - 50} more")
if missing or extra:
    sys.exit(1)
print(f"exports: {library} exports exactly the {len(declared)} functions {header} declares")
