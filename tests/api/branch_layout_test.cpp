// The layout the assembler is asked for (src/CMakeLists.txt,
// MALLARD_BRANCH_ALIGN): no jump in libmallard.so's own code, and no compare
// fused with its conditional jump, crosses a 64-byte block or ends on its
// last byte. free's owner test once straddled such a boundary, and that cost
// a one-thread mixed:write-4k 7% (DESIGN.md "Jumps kept inside 64-byte
// blocks"); nothing else would notice if a toolchain or flag change lost it.
//
// Reads the built library with nm and objdump (paths from CMake). "Own code"
// is every exported function and every local one in mallard's namespaces;
// the toolchain's start-up code (crtstuff, libc_nonshared) is not built with
// the flag and is left out.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr std::uint64_t kBlock = 64;

std::vector<std::string> command_lines(const std::string& command) {
  std::vector<std::string> lines;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return lines;
  std::string line;
  for (int c; (c = std::fgetc(pipe.get())) != EOF;) {
    if (c != '\n') {
      line.push_back(static_cast<char>(c));
    } else {
      lines.push_back(line);
      line.clear();
    }
  }
  return lines;
}

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

// Functions compiled from mallard's sources, by address, with their names
// (an exported function can have several: malloc is also __libc_malloc).
std::map<std::uint64_t, std::vector<std::string>> own_functions() {
  std::map<std::uint64_t, std::vector<std::string>> functions;
  for (const auto& line : command_lines(std::string(MALLARD_NM) + " --defined-only " + MALLARD_LIB_PATH)) {
    auto fields = words(line);
    if (fields.size() != 3) continue;
    const std::string& type = fields[1];
    const std::string& name = fields[2];
    bool exported = type == "T" || type == "W" || type == "i";
    bool ours_local = type == "t" && (starts_with(name, "_ZN7mallard") || starts_with(name, "_ZNK7mallard") ||
                                      starts_with(name, "_ZN12_GLOBAL__N_1"));
    if (exported || ours_local) functions[std::stoull(fields[0], nullptr, 16)].push_back(name);
  }
  return functions;
}

struct Instruction {
  std::uint64_t address;
  std::uint64_t length;
  std::string mnemonic;  // after any prefixes
  std::string text;      // mnemonic and operands as objdump prints them
};

// objdump with every instruction's bytes on its one line, of .text, of the
// rare code's own section (MALLARD_RARE, core/config.hpp) and of malloc's and
// free's (MALLARD_PINNED_ENTRY, src/fast_entries.ld):
//   "    c712:\t77 2c                \tja     c740 <malloc+0x40>"
std::map<std::uint64_t, std::vector<Instruction>> disassembly_by_function() {
  std::map<std::uint64_t, std::vector<Instruction>> functions;
  std::vector<Instruction>* current = nullptr;
  for (const auto& line : command_lines(std::string(MALLARD_OBJDUMP) + " -d --insn-width=16 -j .text -j mallard_rare -j mallard_entries " + MALLARD_LIB_PATH)) {
    if (!line.empty() && line.back() == ':' && line.find(" <") != std::string::npos) {
      current = &functions[std::stoull(line.substr(0, line.find(' ')), nullptr, 16)];
      continue;
    }
    auto first_tab = line.find('\t');
    auto second_tab = first_tab == std::string::npos ? std::string::npos : line.find('\t', first_tab + 1);
    if (current == nullptr || second_tab == std::string::npos) continue;
    Instruction instruction;
    instruction.address = std::stoull(line.substr(0, line.find(':')), nullptr, 16);
    instruction.length = words(line.substr(first_tab + 1, second_tab - first_tab - 1)).size();
    instruction.text = line.substr(second_tab + 1);
    for (const auto& word : words(instruction.text)) {
      static const std::set<std::string> prefixes = {"cs", "ds", "ss", "es", "fs", "gs", "data16", "addr32", "bnd", "notrack"};
      if (prefixes.count(word) == 0 && !starts_with(word, "rex")) {
        instruction.mnemonic = word;
        break;
      }
    }
    current->push_back(instruction);
  }
  return functions;
}

bool is_direct_jump(const Instruction& instruction) {
  return starts_with(instruction.mnemonic, "j") && instruction.text.find('*') == std::string::npos;
}

// The compares the CPU fuses with a following conditional jump and the
// assembler keeps with it: cmp and test, neither RIP-relative nor between
// memory and an immediate (GNU as, maybe_fused_with_jcc_p).
bool fuses_with_next_jump(const Instruction& instruction) {
  if (!starts_with(instruction.mnemonic, "cmp") && !starts_with(instruction.mnemonic, "test")) return false;
  if (instruction.text.find("%rip") != std::string::npos) return false;
  bool memory = instruction.text.find('(') != std::string::npos;
  bool immediate = instruction.text.find('$') != std::string::npos;
  return !(memory && immediate);
}

bool crosses_or_ends_on_boundary(std::uint64_t start, std::uint64_t end) {
  return start / kBlock != (end - 1) / kBlock || end % kBlock == 0;
}

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

TEST(BranchLayout, NoJumpOrFusedPairInMallardsCodeCrossesA64ByteBoundary) {
  auto own = own_functions();
  auto disassembly = disassembly_by_function();
  ASSERT_FALSE(own.empty()) << MALLARD_NM << " listed no functions in " << MALLARD_LIB_PATH;
  ASSERT_FALSE(disassembly.empty()) << MALLARD_OBJDUMP << " disassembled nothing in " << MALLARD_LIB_PATH;

  std::map<std::string, int> jumps_in;
  std::vector<std::string> violations;
  for (const auto& [start, names] : own) {
    const std::string& name = names.back();
    auto found = disassembly.find(start);
    ASSERT_NE(found, disassembly.end()) << name << " at " << hex(start) << " is not in .text, mallard_rare or mallard_entries";
    const auto& code = found->second;
    for (std::size_t i = 0; i < code.size(); ++i) {
      const Instruction& jump = code[i];
      if (!is_direct_jump(jump)) continue;
      for (const auto& alias : names) ++jumps_in[alias];
      std::uint64_t span_start = jump.address;
      const Instruction* before = i > 0 ? &code[i - 1] : nullptr;
      bool fused = jump.mnemonic != "jmp" && before != nullptr && before->address + before->length == jump.address &&
                   fuses_with_next_jump(*before);
      if (fused) span_start = before->address;
      if (crosses_or_ends_on_boundary(span_start, jump.address + jump.length)) {
        violations.push_back(name + " " + hex(span_start) + ": " + (fused ? before->text + " ; " : "") + jump.text);
      }
    }
  }

  // The parse found the fast paths' own jumps: malloc's size tests and
  // free's owner test.
  EXPECT_GE(jumps_in["malloc"], 3) << "the parse found too few jumps in malloc";
  EXPECT_GE(jumps_in["free"], 3) << "the parse found too few jumps in free";
  std::string listing;
  for (const auto& violation : violations) listing += "\n  " + violation;
  EXPECT_TRUE(violations.empty()) << violations.size() << " jumps cross or end on a 64-byte boundary:" << listing;
}

#ifdef MALLARD_ENTRIES_PINNED
// malloc and free sit where src/fast_entries.ld puts them, at offsets 0x280
// and 0x300 of a 4 KiB page, whatever the rest of the library's code: a
// linker that dropped the script would let every change elsewhere move them
// again (DESIGN.md "malloc and free pinned").
TEST(BranchLayout, MallocAndFreeSitAtTheirPinnedOffsets) {
  std::map<std::string, std::uint64_t> address_of;
  for (const auto& [start, names] : own_functions()) {
    for (const auto& name : names) address_of[name] = start;
  }
  ASSERT_EQ(address_of.count("malloc"), 1u) << "no malloc in " << MALLARD_LIB_PATH;
  ASSERT_EQ(address_of.count("free"), 1u) << "no free in " << MALLARD_LIB_PATH;
  EXPECT_EQ(hex(address_of["malloc"] % 4096), "0x280") << "malloc at " << hex(address_of["malloc"]);
  EXPECT_EQ(hex(address_of["free"] % 4096), "0x300") << "free at " << hex(address_of["free"]);
}
#endif

}  // namespace
