// ILDG gauge files in LIME containers (format in gauge_io.h): the record scanner with its
// checks, reading with the SciDAC checksum, and writing the records Latke produces itself.
#include <mpi.h>

#include <cctype>
#include <fstream>
#include <sstream>

#include "src/fields/gauge_io_detail.h"
#include "src/fields/gauge_observables.h"

namespace latke::gauge_io {

namespace {

constexpr std::size_t lime_header_bytes = 144, lime_type_bytes = 128;
constexpr std::uint64_t lime_mb = 0x8000, lime_me = 0x4000;
/// Records up to this size (other than binary data) are kept as text for info and checks.
constexpr std::uint64_t text_record_limit = 65536;

std::uint64_t padded(std::uint64_t n) { return (n + 7) / 8 * 8; }

/// The text between <tag> and </tag> (attributes on the opening tag allowed); false if absent.
bool xml_value(const std::string& xml, const std::string& tag, std::string& value) {
  std::size_t open = xml.find("<" + tag + ">");
  std::size_t start = open == std::string::npos ? std::string::npos : open + tag.size() + 2;
  if (open == std::string::npos) {
    open = xml.find("<" + tag + " ");
    if (open == std::string::npos) return false;
    start = xml.find('>', open);
    if (start == std::string::npos) return false;
    ++start;
  }
  const std::size_t close = xml.find("</" + tag + ">", start);
  if (close == std::string::npos) return false;
  std::size_t b = start, e = close;
  while (b < e && std::isspace(static_cast<unsigned char>(xml[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(xml[e - 1]))) --e;
  value = xml.substr(b, e - b);
  return true;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&')
      out += "&amp;";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else
      out += c;
  }
  return out;
}

const LimeRecord* find_record(const GaugeFileInfo& info, const std::string& type) {
  for (const LimeRecord& r : info.records)
    if (r.type == type) return &r;
  return nullptr;
}

std::string lime_record(const std::string& type, const std::string& data, bool mb, bool me,
                        std::uint64_t length_if_empty = 0) {
  std::string h(lime_header_bytes, '\0');
  auto* p = reinterpret_cast<unsigned char*>(h.data());
  store_be(p, lime_magic, 4);
  store_be(p + 4, 1, 2);
  store_be(p + 6, (mb ? lime_mb : 0) | (me ? lime_me : 0), 2);
  store_be(p + 8, data.empty() ? length_if_empty : data.size(), 8);
  h.replace(16, type.size(), type);
  if (data.empty()) return h;
  return h + data + std::string(padded(data.size()) - data.size(), '\0');
}

}  // namespace

GaugeFileInfo parse_lime(const std::string& path, std::uint64_t file_bytes) {
  std::ifstream f(path, std::ios::binary);
  GaugeFileInfo info;
  info.format = GaugeFileFormat::ildg;
  info.file_bytes = file_bytes;
  std::uint64_t pos = 0;
  bool previous_end = true;  // the first record must begin a message
  while (pos < file_bytes) {
    const std::string where =
        path + ": LIME record " + std::to_string(info.records.size()) + " at byte " + std::to_string(pos);
    require(file_bytes - pos >= lime_header_bytes, where, ": only ", file_bytes - pos,
            " bytes left, but a LIME record header has 144 (the file is truncated or malformed)");
    unsigned char h[lime_header_bytes];
    f.seekg(static_cast<std::streamoff>(pos));
    f.read(reinterpret_cast<char*>(h), lime_header_bytes);
    require(f.good(), where, ": cannot read the record header");
    const std::uint64_t magic = load_be(h, 4), version = load_be(h + 4, 2), flags = load_be(h + 6, 2);
    require(magic == lime_magic, where, ": magic number 0x", hex32(static_cast<std::uint32_t>(magic)),
            " is not LIME's 0x456789ab (malformed record)");
    require(version == 1, where, ": LIME version ", version, ", expected 1");
    LimeRecord r;
    r.header_offset = pos;
    r.data_offset = pos + lime_header_bytes;
    r.bytes = load_be(h + 8, 8);
    r.message_begin = flags & lime_mb;
    r.message_end = flags & lime_me;
    const char* type = reinterpret_cast<const char*>(h + 16);
    std::size_t type_len = 0;
    while (type_len < lime_type_bytes && type[type_len] != '\0') ++type_len;
    require(type_len < lime_type_bytes, where, ": the type string is not NUL-terminated within 128 bytes");
    r.type.assign(type, type_len);
    const std::string rec = where + " ('" + r.type + "')";
    require(r.message_begin == previous_end, rec, ": message-begin flag ", r.message_begin ? 1 : 0,
            " after a record with message-end flag ", previous_end ? 1 : 0,
            " (LIME: a record begins a message exactly when the one before ended one)");
    const std::uint64_t left = file_bytes - r.data_offset;
    require(r.bytes <= left, rec, ": claims ", r.bytes, " bytes of data, but only ", left,
            " remain (the file is truncated or the length is wrong)");
    require(padded(r.bytes) <= left, rec, ": its data (", r.bytes, " bytes) lacks the zero padding to a multiple of 8");
    if (r.bytes <= text_record_limit && r.type != "ildg-binary-data") {
      std::string text(r.bytes, '\0');
      f.read(text.data(), static_cast<std::streamsize>(r.bytes));
      std::string clean;
      for (char c : text)
        if (c != '\0') clean += c;
      r.text = clean;
    }
    previous_end = r.message_end;
    pos = r.data_offset + padded(r.bytes);
    info.records.push_back(r);
  }
  require(!info.records.empty(), path, ": the LIME file has no records");
  require(previous_end, path, ": the last LIME record ('", info.records.back().type,
          "') does not end a message (message-end flag 0)");

  std::string types;
  for (const LimeRecord& r : info.records) types += (types.empty() ? "" : ", ") + r.type;
  const LimeRecord* format = find_record(info, "ildg-format");
  require(format, path, ": no ildg-format record, so not an ILDG gauge file (records: ", types, ")");
  std::string field, precision;
  require(xml_value(format->text, "field", field) && field == "su3gauge", path, ": ildg-format field '", field,
          "': expected su3gauge");
  require(xml_value(format->text, "precision", precision), path, ": ildg-format has no <precision>");
  if (precision == "32" || precision == "F")
    info.precision = Precision::single;
  else if (precision == "64" || precision == "D")
    info.precision = Precision::double_;
  else
    fail(path, ": ildg-format precision '", precision, "': expected 32 or 64");
  const char* dim_tags[4] = {"lx", "ly", "lz", "lt"};
  for (int d = 0; d < 4; ++d) {
    std::string v;
    require(xml_value(format->text, dim_tags[d], v), path, ": ildg-format has no <", dim_tags[d], ">");
    info.dims[d] = parse_positive(path, std::string("ildg-format <") + dim_tags[d] + ">", v);
  }
  const LimeRecord* data = find_record(info, "ildg-binary-data");
  require(data, path, ": no ildg-binary-data record (records: ", types, ")");
  const std::uint64_t sites = static_cast<std::uint64_t>(info.dims[0]) * info.dims[1] * info.dims[2] * info.dims[3];
  const std::uint64_t want = sites * 4 * 18 * (info.precision == Precision::single ? 4 : 8);
  require(data->bytes == want, path, ": ildg-binary-data holds ", data->bytes, " bytes, but a ", dims_text(info.dims),
          " lattice of 3x3 links in ", precision, "-bit precision needs ", want);
  info.data_offset = data->data_offset;
  info.data_bytes = data->bytes;
  if (const LimeRecord* rec = find_record(info, "scidac-record-xml")) {
    std::string seq;
    if (xml_value(rec->text, "sequenceNumber", seq)) {
      try {
        info.sequence_number = std::stol(seq);
      } catch (const std::exception&) {
        info.sequence_number = -1;
      }
    }
  }
  return info;
}

std::vector<Complex<double>> read_ildg(const Lattice& lat, const std::string& path, const GaugeFileInfo& info,
                                       Backend b, const GaugeReadParam& param) {
  SiteFormat f;
  f.single = info.precision == Precision::single;
  const std::vector<unsigned char> bytes = read_sites(lat, path, info.data_offset, f.site_bytes());
  if (const LimeRecord* c = find_record(info, "scidac-checksum")) {
    std::string a, bsum;
    require(xml_value(c->text, "suma", a) && xml_value(c->text, "sumb", bsum), path,
            ": the scidac-checksum record has no <suma> and <sumb>");
    const std::uint32_t want[2] = {parse_hex32(path, "scidac-checksum suma", a),
                                   parse_hex32(path, "scidac-checksum sumb", bsum)};
    std::uint32_t local[2], total[2];
    scidac_checksum(lat, bytes, f.site_bytes(), local[0], local[1]);
    MPI_Allreduce(local, total, 2, MPI_UINT32_T, MPI_BXOR, lat.comm());
    require(total[0] == want[0] && total[1] == want[1], path, ": scidac-checksum mismatch: the file says suma ", a,
            ", sumb ", bsum, "; the data give suma ", hex32(total[0]), ", sumb ", hex32(total[1]));
  }
  std::vector<Complex<double>> links = decode_links(bytes, f);
  // Before the stated plaquette: a link that is not SU(3) is named, not a mean of them.
  check_read_links(lat, path, links, f.single, !param.accept_nonunitary);
  const LimeRecord* rec = find_record(info, "scidac-record-xml");
  std::string plaq, trace;
  if (rec && rec->text.find("<latkeGauge>") != std::string::npos) {
    const bool has_plaq = xml_value(rec->text, "plaquette", plaq), has_trace = xml_value(rec->text, "linkTrace", trace);
    if (has_plaq || has_trace) {
      const GaugeObservables o = measure_gauge(lat, links, b);
      if (has_plaq) check_stated(path, "plaquette (scidac-record-xml)", plaq, o.plaquette, f.single);
      if (has_trace) check_stated(path, "linkTrace (scidac-record-xml)", trace, o.link_trace, f.single);
    }
  }
  if (f.single) reunitarize_if_close(lat, links);
  return links;
}

void write_ildg(const Lattice& lat, const std::vector<Complex<double>>& links, const std::string& path,
                const GaugeWriteParam& p, Backend b) {
  SiteFormat f;
  f.single = p.precision == Precision::single;
  const std::vector<unsigned char> bytes = encode_links(links, f);
  const GaugeObservables o = measure_gauge(lat, decode_links(bytes, f), b);
  require_finite_observables(path, o);
  std::uint32_t local[2], sum[2];
  scidac_checksum(lat, bytes, f.site_bytes(), local[0], local[1]);
  MPI_Allreduce(local, sum, 2, MPI_UINT32_T, MPI_BXOR, lat.comm());

  const Coords& G = lat.global();
  const std::uint64_t data_bytes = static_cast<std::uint64_t>(lat.volume()) * lat.size() * f.site_bytes();
  const char* bits = f.single ? "32" : "64";
  const std::string date = now_text();
  const std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>";
  std::ostringstream dims, file_xml, private_record, record, format;
  dims << G[0] << " " << G[1] << " " << G[2] << " " << G[3] << " ";
  file_xml << xml << "<latkeFile><creator>Latke</creator><date>" << date << "</date><ensembleId>"
           << xml_escape(p.ensemble_id) << "</ensembleId><ensembleLabel>" << xml_escape(p.ensemble_label)
           << "</ensembleLabel></latkeFile>";
  private_record << xml << "<scidacRecord><version>1.1</version><date>" << date
                 << "</date><recordtype>0</recordtype><datatype>QDP_" << (f.single ? "F" : "D")
                 << "3_ColorMatrix</datatype><precision>" << (f.single ? "F" : "D")
                 << "</precision><colors>3</colors><spins>4</spins><typesize>" << 18 * f.real_bytes()
                 << "</typesize><datacount>4</datacount></scidacRecord>";
  record << xml << "<latkeGauge><plaquette>" << print_real(o.plaquette) << "</plaquette><linkTrace>"
         << print_real(o.link_trace) << "</linkTrace><sequenceNumber>" << p.sequence_number
         << "</sequenceNumber></latkeGauge>";
  format << xml
         << "<ildgFormat xmlns=\"http://www.lqcd.org/ildg\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
            "xsi:schemaLocation=\"http://www.lqcd.org/ildg http://www.lqcd.org/ildg/filefmt.xsd\">"
         << "<version>1.0</version><field>su3gauge</field><precision>" << bits << "</precision><lx>" << G[0]
         << "</lx><ly>" << G[1] << "</ly><lz>" << G[2] << "</lz><lt>" << G[3] << "</lt></ildgFormat>";
  const std::string checksum = xml + "<scidacChecksum><version>1.0</version><suma>" + hex32(sum[0]) + "</suma><sumb>" +
                               hex32(sum[1]) + "</sumb></scidacChecksum>";
  std::string lfn = p.lfn;
  if (lfn.empty()) lfn = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);

  // Rank 0's records for all (their dates): the links start at the same offset everywhere.
  std::string prefix = lime_record("scidac-private-file-xml",
                                   xml + "<scidacFile><version>1.1</version><spacetime>4</spacetime><dims>" +
                                       dims.str() + "</dims><volfmt>0</volfmt></scidacFile>",
                                   true, false) +
                       lime_record("scidac-file-xml", file_xml.str(), false, true) +
                       lime_record("scidac-private-record-xml", private_record.str(), true, false) +
                       lime_record("scidac-record-xml", record.str(), false, false) +
                       lime_record("ildg-format", format.str(), false, false) +
                       lime_record("ildg-binary-data", "", false, false, data_bytes);
  std::string suffix =
      lime_record("scidac-checksum", checksum, false, true) + lime_record("ildg-data-lfn", lfn, true, true);
  bcast_string(lat.comm(), prefix);
  bcast_string(lat.comm(), suffix);

  AtomicFile file(lat.comm(), path);
  file.write_root(0, prefix);
  file.write_sites(lat, prefix.size(), bytes, f.site_bytes());
  file.write_root(prefix.size() + data_bytes, suffix);
  file.commit(prefix.size() + data_bytes + suffix.size());
}

}  // namespace latke::gauge_io
