#include "alloc/elf_symbols.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <optional>

namespace mallard::tool {

namespace {

// A read-only mapping of a whole file, unmapped on scope exit.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat info {};
    if (fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && info.st_size >= static_cast<off_t>(sizeof(Elf64_Ehdr))) {
      void* mapping = mmap(nullptr, static_cast<std::size_t>(info.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (mapping != MAP_FAILED) {
        data_ = static_cast<const unsigned char*>(mapping);
        size_ = static_cast<std::size_t>(info.st_size);
      }
    }
    close(fd);
  }
  ~MappedFile() {
    if (data_ != nullptr) munmap(const_cast<unsigned char*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  bool contains(std::size_t offset, std::size_t length) const { return data_ != nullptr && offset <= size_ && length <= size_ - offset; }
  const unsigned char* at(std::size_t offset) const { return data_ + offset; }

 private:
  const unsigned char* data_ = nullptr;
  std::size_t size_ = 0;
};

// The ELF header of a 64-bit object with a readable section table, or nullopt.
std::optional<Elf64_Ehdr> elf_header(const MappedFile& file) {
  if (!file.contains(0, sizeof(Elf64_Ehdr))) return std::nullopt;
  Elf64_Ehdr header;
  std::memcpy(&header, file.at(0), sizeof header);
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64) return std::nullopt;
  if (header.e_shentsize != sizeof(Elf64_Shdr) || !file.contains(header.e_shoff, std::size_t{header.e_shnum} * sizeof(Elf64_Shdr))) {
    return std::nullopt;
  }
  return header;
}

Elf64_Shdr section_at(const MappedFile& file, const Elf64_Ehdr& header, std::size_t index) {
  Elf64_Shdr out;
  std::memcpy(&out, file.at(header.e_shoff + index * sizeof(Elf64_Shdr)), sizeof out);
  return out;
}

}  // namespace

std::vector<std::string> elf_needed_libraries(const std::string& path) {
  std::vector<std::string> needed;
  MappedFile file(path);
  auto header = elf_header(file);
  if (!header) return needed;
  for (std::size_t i = 0; i < header->e_shnum; ++i) {
    Elf64_Shdr dynamic = section_at(file, *header, i);
    if (dynamic.sh_type != SHT_DYNAMIC || dynamic.sh_link >= header->e_shnum) continue;
    Elf64_Shdr strings = section_at(file, *header, dynamic.sh_link);
    if (!file.contains(dynamic.sh_offset, dynamic.sh_size) || !file.contains(strings.sh_offset, strings.sh_size)) return needed;
    for (std::size_t e = 0; e < dynamic.sh_size / sizeof(Elf64_Dyn); ++e) {
      Elf64_Dyn entry;
      std::memcpy(&entry, file.at(dynamic.sh_offset + e * sizeof(Elf64_Dyn)), sizeof entry);
      if (entry.d_tag == DT_NULL) break;
      if (entry.d_tag != DT_NEEDED || entry.d_un.d_val >= strings.sh_size) continue;
      const char* name = reinterpret_cast<const char*>(file.at(strings.sh_offset + entry.d_un.d_val));
      std::size_t room = strings.sh_size - entry.d_un.d_val;
      if (strnlen(name, room) < room) needed.emplace_back(name);
    }
  }
  return needed;
}

bool elf_exports_function(const std::string& path, const std::string& symbol) {
  MappedFile file(path);
  auto parsed = elf_header(file);
  if (!parsed) return false;
  const Elf64_Ehdr& header = *parsed;
  auto section = [&](std::size_t index) { return section_at(file, header, index); };
  for (std::size_t i = 0; i < header.e_shnum; ++i) {
    Elf64_Shdr symbols = section(i);
    if (symbols.sh_type != SHT_DYNSYM || symbols.sh_link >= header.e_shnum) continue;
    Elf64_Shdr strings = section(symbols.sh_link);
    if (!file.contains(symbols.sh_offset, symbols.sh_size) || !file.contains(strings.sh_offset, strings.sh_size)) return false;
    std::size_t count = symbols.sh_size / sizeof(Elf64_Sym);
    for (std::size_t s = 0; s < count; ++s) {
      Elf64_Sym entry;
      std::memcpy(&entry, file.at(symbols.sh_offset + s * sizeof(Elf64_Sym)), sizeof entry);
      if (entry.st_shndx == SHN_UNDEF || entry.st_name >= strings.sh_size) continue;
      unsigned type = ELF64_ST_TYPE(entry.st_info), binding = ELF64_ST_BIND(entry.st_info);
      if (type != STT_FUNC && type != STT_GNU_IFUNC) continue;
      if (binding != STB_GLOBAL && binding != STB_WEAK) continue;
      const char* name = reinterpret_cast<const char*>(file.at(strings.sh_offset + entry.st_name));
      std::size_t room = strings.sh_size - entry.st_name;
      if (strnlen(name, room) < room && symbol == name) return true;
    }
  }
  return false;
}

}  // namespace mallard::tool
