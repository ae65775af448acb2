// Reads an ELF shared object's dynamic symbol table, to learn whether it
// defines (exports) a symbol such as malloc. `mallard which` uses it to find
// which loaded object a process's malloc calls bind to.
#pragma once

#include <string>
#include <vector>

namespace mallard::tool {

// True when the file is a 64-bit ELF object whose .dynsym defines a global
// or weak function of that name; false for anything else, unreadable files included.
bool elf_exports_function(const std::string& path, const std::string& symbol);
// The DT_NEEDED entries (sonames) of an ELF object; empty when unreadable.
std::vector<std::string> elf_needed_libraries(const std::string& path);

}  // namespace mallard::tool
