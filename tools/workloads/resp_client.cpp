#include "workloads/resp_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <stdexcept>

#include "util/text.hpp"

namespace mallard::tool {

RespClient::~RespClient() {
  if (fd_ >= 0) close(fd_);
}

bool RespClient::connect_local(int port) {
  if (fd_ >= 0) close(fd_);
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    close(fd_);
    fd_ = -1;
    return false;
  }
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return true;
}

void RespClient::queue(const std::vector<std::string_view>& arguments) {
  outgoing_ += '*';
  outgoing_ += std::to_string(arguments.size());
  outgoing_ += "\r\n";
  for (auto argument : arguments) {
    outgoing_ += '$';
    outgoing_ += std::to_string(argument.size());
    outgoing_ += "\r\n";
    outgoing_.append(argument);
    outgoing_ += "\r\n";
  }
  ++queued_;
}

void RespClient::send_outgoing() {
  std::size_t sent = 0;
  while (sent < outgoing_.size()) {
    ssize_t written = write(fd_, outgoing_.data() + sent, outgoing_.size() - sent);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) throw std::runtime_error("redis: connection lost while sending");
    sent += static_cast<std::size_t>(written);
  }
  outgoing_.clear();
}

void RespClient::flush_and_read_replies() {
  send_outgoing();
  for (; queued_ > 0; --queued_) read_reply();
}

std::string RespClient::call(const std::vector<std::string_view>& arguments) {
  queue(arguments);
  send_outgoing();
  queued_ = 0;
  return read_reply();
}

std::map<std::string, std::string> RespClient::info(std::string_view section) {
  std::map<std::string, std::string> fields;
  for (const auto& line : split(call({"INFO", section}), '\n')) {
    std::string_view text = trim(line);
    auto colon = text.find(':');
    if (text.empty() || text[0] == '#' || colon == std::string_view::npos) continue;
    fields[std::string(text.substr(0, colon))] = std::string(text.substr(colon + 1));
  }
  return fields;
}

char RespClient::next_byte() {
  if (incoming_begin_ == incoming_end_) {
    ssize_t got;
    do {
      got = read(fd_, incoming_.data(), incoming_.size());
    } while (got < 0 && errno == EINTR);
    if (got <= 0) throw std::runtime_error("redis: connection closed");
    incoming_begin_ = 0;
    incoming_end_ = static_cast<std::size_t>(got);
  }
  return incoming_[incoming_begin_++];
}

std::string RespClient::read_line() {
  std::string line;
  for (char c = next_byte(); c != '\n'; c = next_byte()) line += c;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

void RespClient::read_exact(std::size_t bytes, std::string& into) {
  for (std::size_t i = 0; i < bytes; ++i) into += next_byte();
}

std::string RespClient::read_reply() {
  char type = next_byte();
  std::string line = read_line();
  switch (type) {
    case '+':
    case ':':
      return line;
    case '-':
      throw std::runtime_error("redis: " + line);
    case '$': {
      long length = std::strtol(line.c_str(), nullptr, 10);
      if (length < 0) return "";
      std::string body;
      read_exact(static_cast<std::size_t>(length) + 2, body);
      body.resize(static_cast<std::size_t>(length));
      return body;
    }
    case '*': {
      long count = std::strtol(line.c_str(), nullptr, 10);
      for (long i = 0; i < count; ++i) read_reply();
      return "";
    }
    default:
      throw std::runtime_error("redis: unexpected reply type");
  }
}

}  // namespace mallard::tool
