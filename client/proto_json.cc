#include "client/proto_json.h"

#include "google/protobuf/descriptor.h"
#include "nlohmann/json.hpp"

namespace perfcast::client {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using Json = nlohmann::json;

Json ToJson(const Message& message, bool expand_unset);

// Element `index` of a repeated field, or the singular field when index < 0.
Json Value(const Message& message, const FieldDescriptor* field, int index, bool expand_unset) {
  const Reflection* r = message.GetReflection();
  const bool repeated = index >= 0;
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return repeated ? r->GetRepeatedInt32(message, field, index) : r->GetInt32(message, field);
    case FieldDescriptor::CPPTYPE_INT64:
      return repeated ? r->GetRepeatedInt64(message, field, index) : r->GetInt64(message, field);
    case FieldDescriptor::CPPTYPE_UINT32:
      return repeated ? r->GetRepeatedUInt32(message, field, index) : r->GetUInt32(message, field);
    case FieldDescriptor::CPPTYPE_UINT64:
      return repeated ? r->GetRepeatedUInt64(message, field, index) : r->GetUInt64(message, field);
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return repeated ? r->GetRepeatedDouble(message, field, index) : r->GetDouble(message, field);
    case FieldDescriptor::CPPTYPE_FLOAT:
      return repeated ? r->GetRepeatedFloat(message, field, index) : r->GetFloat(message, field);
    case FieldDescriptor::CPPTYPE_BOOL:
      return repeated ? r->GetRepeatedBool(message, field, index) : r->GetBool(message, field);
    case FieldDescriptor::CPPTYPE_ENUM: {
      const int value = repeated ? r->GetRepeatedEnumValue(message, field, index)
                                 : r->GetEnumValue(message, field);
      const google::protobuf::EnumValueDescriptor* named =
          field->enum_type()->FindValueByNumber(value);
      return named != nullptr ? Json(named->name()) : Json(value);
    }
    case FieldDescriptor::CPPTYPE_STRING:
      return repeated ? r->GetRepeatedString(message, field, index) : r->GetString(message, field);
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return ToJson(repeated ? r->GetRepeatedMessage(message, field, index)
                             : r->GetMessage(message, field),
                    expand_unset);
  }
  return nullptr;
}

Json ToJson(const Message& message, bool expand_unset) {
  Json out = Json::object();
  const google::protobuf::Descriptor* descriptor = message.GetDescriptor();
  const Reflection* r = message.GetReflection();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor* field = descriptor->field(i);
    if (field->is_map()) {
      Json map = Json::object();
      for (int k = 0; k < r->FieldSize(message, field); ++k) {
        const Message& entry = r->GetRepeatedMessage(message, field, k);
        const FieldDescriptor* key = entry.GetDescriptor()->map_key();
        const FieldDescriptor* value = entry.GetDescriptor()->map_value();
        Json key_json = Value(entry, key, -1, false);
        map[key_json.is_string() ? key_json.get<std::string>() : key_json.dump()] =
            Value(entry, value, -1, expand_unset);
      }
      out[field->name()] = std::move(map);
    } else if (field->is_repeated()) {
      Json list = Json::array();
      for (int k = 0; k < r->FieldSize(message, field); ++k) {
        list.push_back(Value(message, field, k, expand_unset));
      }
      out[field->name()] = std::move(list);
    } else if (field->containing_oneof() != nullptr && !r->HasField(message, field)) {
      continue;  // the other member of the oneof is the one set
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE &&
               !r->HasField(message, field) && !expand_unset) {
      out[field->name()] = nullptr;
    } else {
      out[field->name()] = Value(message, field, -1, expand_unset);
    }
  }
  return out;
}

}  // namespace

std::string ProtoJson(const Message& message) {
  // Names and errors may hold bytes that are not UTF-8; replace them rather
  // than throw.
  return ToJson(message, false).dump(-1, ' ', false, Json::error_handler_t::replace);
}

Json ProtoJsonValue(const Message& message, bool expand_unset) {
  return ToJson(message, expand_unset);
}

}  // namespace perfcast::client
