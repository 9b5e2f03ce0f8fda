// The module order of ../shared/DESIGN.md, checked on the sources: a module includes only the
// modules listed before it (the per-module link checks in CMakeLists.txt check the calls).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace inferlab {
namespace {

// Level of each module; a module may include only modules of a lower level. The two front ends
// come last: the Python binding (python) runs the CLI's commands, so it sits above cli.
const std::map<std::string, int>& module_levels() {
  static const std::map<std::string, int> levels = {
      {"util", 0},   {"hw", 1},      {"model", 1},  {"area", 2},  {"cost", 2},
      {"probe", 2},  {"predict", 3}, {"fit", 4},    {"serve", 4}, {"explore", 4},
      {"engine", 5}, {"server", 6},  {"report", 7}, {"cli", 8},   {"python", 9}};
  return levels;
}

// "module/..." of every #include "..." line of a file.
std::vector<std::string> included_modules(const std::filesystem::path& file) {
  static const std::regex include_line(R"(^\s*#\s*include\s+"([a-z_]+)/)");
  std::vector<std::string> modules;
  std::ifstream in(file);
  std::string line;
  std::smatch match;
  while (std::getline(in, line))
    if (std::regex_search(line, match, include_line)) modules.push_back(match[1]);
  return modules;
}

std::filesystem::path source_root() {
  return std::filesystem::path(testing::test_data_dir()).parent_path() / "src";
}

TEST(Layering, EveryFolderOfSrcIsAModule) {
  for (const auto& entry : std::filesystem::directory_iterator(source_root()))
    if (entry.is_directory())
      EXPECT_TRUE(module_levels().contains(entry.path().filename().string()))
          << entry.path() << " is not in DESIGN.md's module order";
}

TEST(Layering, IncludesFollowTheModuleOrder) {
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(source_root())) {
    if (!entry.is_regular_file()) continue;
    auto relative = std::filesystem::relative(entry.path(), source_root());
    std::string module = relative.begin()->string();
    auto own = module_levels().find(module);
    if (own == module_levels().end()) continue;  // reported by the test above
    ++files;
    for (const std::string& target : included_modules(entry.path())) {
      if (target == module) continue;
      auto level = module_levels().find(target);
      ASSERT_NE(level, module_levels().end()) << relative << " includes unknown module " << target;
      EXPECT_LT(level->second, own->second) << relative << " includes " << target << "/";
    }
  }
  EXPECT_GT(files, 100);  // the walk found the sources
}

}  // namespace
}  // namespace inferlab
