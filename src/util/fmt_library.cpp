// fmt's compiled part (what libfmt's format.cc holds), built once here. The modules use fmt's
// headers without FMT_HEADER_ONLY, so no translation unit compiles fmt's implementation again
// (with FMT_HEADER_ONLY every file that formats did: cli/cmd_report.cpp took 34 s instead of
// 23 s), and the binary still needs no libfmt at run time (the GPU machine has none). The
// explicit instantiations are those fmt 9's format.h declares extern or leaves to format.cc.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;

template FMT_API locale_ref::locale_ref(const std::locale& loc);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;

template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API void buffer<char>::append(const char*, const char*);

template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;
template FMT_API void buffer<wchar_t>::append(const wchar_t*, const wchar_t*);

}  // namespace detail
FMT_END_NAMESPACE
